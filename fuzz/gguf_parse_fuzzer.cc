// libFuzzer target: GgufFile::parse on arbitrary bytes must either succeed
// or throw GgufError; anything else (a crash, a sanitizer report, another
// exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "lamina/gguf/file.h"
#include "lamina/gguf/value.h"

namespace {

// Touches everything a successful parse hands out, so views that point
// outside the input or values that do not hold together show up under ASan.
void use_everything(const lamina::gguf::GgufFile& f) {
  std::size_t sink = 0;
  for (const auto& kv : f.metadata()) {
    sink += lamina::gguf::to_display_string(kv.value, 4).size();
    if (f.find(kv.key) == nullptr) __builtin_trap();
  }
  for (const auto& t : f.tensors()) {
    if (f.find_tensor(t.name) == nullptr) __builtin_trap();
    if (t.data.size() != t.n_bytes) __builtin_trap();
    if (!t.data.empty())
      sink += static_cast<std::size_t>(t.data.front()) + static_cast<std::size_t>(t.data.back());
    sink += t.row_bytes();
  }
  (void)f.architecture();
  volatile std::size_t keep = sink;
  (void)keep;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const auto f = lamina::gguf::GgufFile::parse(bytes);
    use_everything(f);
  } catch (const lamina::gguf::GgufError&) {
    // Rejecting bad input is the expected outcome for most inputs.
  }
  return 0;
}

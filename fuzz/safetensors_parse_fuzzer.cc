// libFuzzer target: the safetensors reader (and the shard index reader) on
// arbitrary bytes must either succeed or throw SafetensorsError; anything else
// (a crash, a sanitizer report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "hf/safetensors.h"

namespace {

// Touches everything a successful parse hands out, so views that point
// outside the input show up under ASan.
void use_everything(const lamina::model::hf::SafetensorsFile& f, std::span<const std::byte> input) {
  std::size_t sink = 0;
  for (const auto& t : f.tensors) {
    if (t.data.size() != t.n_elements() * lamina::model::hf::dtype_size(t.dtype)) __builtin_trap();
    if (!t.data.empty()) {
      if (t.data.data() < input.data() || t.data.data() + t.data.size() > input.data() + input.size()) __builtin_trap();
      sink += static_cast<std::size_t>(t.data.front()) + static_cast<std::size_t>(t.data.back());
    }
    sink += t.name.size();
  }
  for (const auto& [k, v] : f.metadata) sink += k.size() + v.size();
  volatile std::size_t keep = sink;
  (void)keep;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    use_everything(lamina::model::hf::parse_safetensors(bytes, "fuzz.safetensors"), bytes);
  } catch (const lamina::model::hf::SafetensorsError&) {
  }
  try {
    (void)lamina::model::hf::parse_safetensors_index(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.index.json");
  } catch (const lamina::model::hf::SafetensorsError&) {
  }
  return 0;
}

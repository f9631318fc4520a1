// libFuzzer target: the tool-call parser on arbitrary model output. Whatever the
// bytes, the stream split at two points the input chooses must reassemble to
// the whole parse, each call's first delta names it, and nothing may crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "lamina/model/tool_calls.h"

namespace {

using namespace lamina::model;

void add(ToolCallOutput& out, const ToolCallStreamDelta& d) {
  out.content += d.content;
  for (const ToolCallDelta& c : d.calls) {
    if (!c.name.empty()) {
      if (c.index != out.calls.size()) __builtin_trap();
      out.calls.push_back({c.name, {}});
    }
    if (c.index >= out.calls.size()) __builtin_trap();
    out.calls[c.index].arguments += c.arguments;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const auto format = static_cast<ToolCallFormat>(data[0] % 4);
  const std::string_view text(reinterpret_cast<const char*>(data + 3), size - 3);
  const std::size_t a = text.empty() ? 0 : data[1] % (text.size() + 1);
  const std::size_t b = a + (text.size() - a == 0 ? 0 : data[2] % (text.size() - a + 1));
  const ToolCallOutput whole = parse_tool_calls(format, text);
  ToolCallStream stream(format);
  ToolCallOutput pieces;
  add(pieces, stream.append(text.substr(0, a)));
  add(pieces, stream.append(text.substr(a, b - a)));
  add(pieces, stream.append(text.substr(b)));
  add(pieces, stream.finish());
  if (pieces.content != whole.content || pieces.calls.size() != whole.calls.size()) __builtin_trap();
  for (std::size_t i = 0; i < whole.calls.size(); ++i) {
    if (pieces.calls[i].name != whole.calls[i].name || pieces.calls[i].arguments != whole.calls[i].arguments)
      __builtin_trap();
  }
  return 0;
}

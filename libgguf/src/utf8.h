// Internal: UTF-8 validation for keys and names.
#pragma once

#include <string_view>

namespace lamina::gguf {

// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view s);

}  // namespace lamina::gguf

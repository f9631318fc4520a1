// Request bodies as JSON: strict (RFC 8259, UTF-8), parsed in time linear in
// their size, with limits that keep the document a hostile body builds small.
#pragma once

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lamina::serve {

// No real request nests more than a few levels or holds more than a context
// of token ids; the limits bound the memory a body can make the server build
// (about 80 bytes a container, 48 a value) whatever its size.
struct JsonLimits {
  int max_depth = 64;
  std::size_t max_values = std::size_t{1} << 20;     // every value, containers included
  std::size_t max_containers = std::size_t{1} << 16;  // objects and arrays
};

// Parses `body`; 400 when it is not valid JSON (invalid UTF-8, a NUL byte,
// trailing bytes and repeated member names included), breaks a limit, or is
// not an object.
nlohmann::json parse_json_body(std::string_view body, const JsonLimits& limits = {});

}  // namespace lamina::serve

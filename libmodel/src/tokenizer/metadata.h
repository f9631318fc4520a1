// Internal: typed reads of optional tokenizer metadata that report problems as
// TokenizerError naming the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/model/tokenizer.h"
#include "tokenizer/string_table.h"

namespace lamina::model::detail {

template <typename Read>
auto read_metadata(Read&& read) {
  try {
    return read();
  } catch (const gguf::GgufError& e) {
    throw TokenizerError(std::string("tokenizer metadata: ") + e.what());
  }
}

inline std::optional<std::string> optional_string(const gguf::GgufFile& f, std::string_view key) {
  if (!f.contains(key)) return std::nullopt;
  return read_metadata([&] { return f.get_string(key); });
}

// The flag at `key`, or `fallback` when the key is absent.
inline bool bool_or(const gguf::GgufFile& f, std::string_view key, bool fallback) {
  if (!f.contains(key)) return fallback;
  return read_metadata([&] { return f.get_bool(key); });
}

// Any integer type, widened.
inline std::optional<int64_t> optional_integer(const gguf::GgufFile& f, std::string_view key) {
  const gguf::Value* v = f.find(key);
  if (v == nullptr) return std::nullopt;
  return read_metadata([&] {
    if (v->type() == gguf::ValueType::UInt64 || v->type() == gguf::ValueType::UInt32) {
      const uint64_t u = v->as_uint64();
      return u > uint64_t{INT64_MAX} ? INT64_MAX : static_cast<int64_t>(u);
    }
    try {
      return v->as_int64();
    } catch (const gguf::GgufError& e) {
      throw gguf::GgufError("metadata key '" + std::string(key) + "': " + e.what());
    }
  });
}

// The array of strings at `key`, packed; throws TokenizerError when it is missing or not strings.
inline StringTable required_string_table(const gguf::GgufFile& f, std::string_view key) {
  if (!f.contains(key)) {
    throw TokenizerError("tokenizer metadata: missing key '" + std::string(key) + "'");
  }
  return read_metadata([&] {
    const gguf::Array& a = f.get_array(key);
    if (a.element_type() != gguf::ValueType::String)
      throw gguf::GgufError("metadata key '" + std::string(key) + "': expected an array of strings, found an array of " +
                            std::string(gguf::value_type_name(a.element_type())));
    StringTable out;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < a.size(); ++i) bytes += a.string_at(i).size();
    out.reserve(a.size(), bytes);
    for (std::size_t i = 0; i < a.size(); ++i) out.push_back(a.string_at(i));
    return out;
  });
}

}  // namespace lamina::model::detail

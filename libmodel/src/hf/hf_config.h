// config.json (and the other JSON files of a model folder) read with typed
// accessors whose errors name the file and the key.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace lamina::model::hf {

using Json = nlohmann::json;

// Parses `text` as a JSON object; throws ModelError naming `file_name`.
Json parse_json_object(const std::string& text, const std::string& file_name);

class HfConfig {
 public:
  HfConfig(Json root, std::string file_name);

  // A key counts as present when it is there and not null.
  bool has(std::string_view key) const { return find(key) != nullptr; }
  const Json* find(std::string_view key) const;
  // The first of `keys` that is present, or nullptr.
  const Json* find_first(std::initializer_list<std::string_view> keys) const;

  std::optional<uint32_t> u32(std::string_view key) const;
  uint32_t required_u32(std::initializer_list<std::string_view> keys) const;
  std::optional<uint32_t> first_u32(std::initializer_list<std::string_view> keys) const;
  std::optional<double> number(std::string_view key) const;
  std::optional<double> first_number(std::initializer_list<std::string_view> keys) const;
  std::optional<std::string> string(std::string_view key) const;
  std::optional<bool> boolean(std::string_view key) const;

  // The RoPE settings: transformers 5's "rope_parameters", else transformers
  // 4's "rope_scaling" with the top-level "rope_theta" (and
  // "partial_rotary_factor") folded in, as the converter mirrors them.
  const HfConfig& rope() const { return rope_ ? *rope_ : *this; }

  const Json& json() const { return root_; }
  const std::string& file_name() const { return file_name_; }
  [[noreturn]] void fail(std::string_view key, const std::string& what) const;

 private:
  struct Nested {};
  HfConfig(Json root, std::string file_name, Nested) : root_(std::move(root)), file_name_(std::move(file_name)) {}

  Json root_;
  std::string file_name_;
  std::shared_ptr<const HfConfig> rope_;
};

// Reads a config value as an unsigned 32-bit integer (whole-valued floats
// such as 144.0 count), naming `key` and `file` on a mismatch.
uint32_t json_u32(const Json& value, const std::string& file, std::string_view key);

}  // namespace lamina::model::hf

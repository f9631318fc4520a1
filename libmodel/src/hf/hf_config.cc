#include "hf/hf_config.h"

#include <cmath>

#include "lamina/model/config.h"

namespace lamina::model::hf {

Json parse_json_object(const std::string& text, const std::string& file_name) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    throw ModelError(file_name + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw ModelError(file_name + ": not a JSON object");
  return j;
}

uint32_t json_u32(const Json& value, const std::string& file, std::string_view key) {
  auto bad = [&](const std::string& what) {
    return ModelError(file + ": '" + std::string(key) + "' " + what);
  };
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v > UINT32_MAX) throw bad("is too large");
    return static_cast<uint32_t>(v);
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (d >= 0 && d <= UINT32_MAX && std::floor(d) == d) return static_cast<uint32_t>(d);
  }
  throw bad("is not a non-negative integer");
}

HfConfig::HfConfig(Json root, std::string file_name) : root_(std::move(root)), file_name_(std::move(file_name)) {
  Json rope = Json::object();
  if (const Json* p = find("rope_parameters"); p && p->is_object()) {
    rope = *p;
  } else if (const Json* s = find("rope_scaling"); s && s->is_object()) {
    rope = *s;
  }
  // Like the converter: settings written at the top level count when the
  // RoPE object does not carry them itself.
  for (const char* key : {"rope_theta", "partial_rotary_factor", "original_max_position_embeddings"}) {
    if (!rope.contains(key) || rope[key].is_null()) {
      if (const Json* v = find(key)) rope[key] = *v;
    }
  }
  if ((!rope.contains("rope_type") || rope["rope_type"].is_null()) && rope.contains("type")) rope["rope_type"] = rope["type"];
  rope_ = std::shared_ptr<const HfConfig>(new HfConfig(std::move(rope), file_name_ + " (RoPE settings)", Nested{}));
}

const Json* HfConfig::find(std::string_view key) const {
  const auto it = root_.find(key);
  if (it == root_.end() || it->is_null()) return nullptr;
  return &*it;
}

const Json* HfConfig::find_first(std::initializer_list<std::string_view> keys) const {
  for (std::string_view k : keys) {
    if (const Json* v = find(k)) return v;
  }
  return nullptr;
}

void HfConfig::fail(std::string_view key, const std::string& what) const {
  throw ModelError(file_name_ + ": '" + std::string(key) + "' " + what);
}

std::optional<uint32_t> HfConfig::u32(std::string_view key) const {
  const Json* v = find(key);
  if (!v) return std::nullopt;
  return json_u32(*v, file_name_, key);
}

std::optional<uint32_t> HfConfig::first_u32(std::initializer_list<std::string_view> keys) const {
  for (std::string_view k : keys) {
    if (auto v = u32(k)) return v;
  }
  return std::nullopt;
}

uint32_t HfConfig::required_u32(std::initializer_list<std::string_view> keys) const {
  if (auto v = first_u32(keys)) return *v;
  std::string names;
  for (std::string_view k : keys) names += (names.empty() ? "'" : ", '") + std::string(k) + "'";
  throw ModelError(file_name_ + ": missing " + names);
}

std::optional<double> HfConfig::number(std::string_view key) const {
  const Json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(key, "is not a number");
  return v->get<double>();
}

std::optional<double> HfConfig::first_number(std::initializer_list<std::string_view> keys) const {
  for (std::string_view k : keys) {
    if (auto v = number(k)) return v;
  }
  return std::nullopt;
}

std::optional<std::string> HfConfig::string(std::string_view key) const {
  const Json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(key, "is not a string");
  return v->get<std::string>();
}

std::optional<bool> HfConfig::boolean(std::string_view key) const {
  const Json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(key, "is not true or false");
  return v->get<bool>();
}

}  // namespace lamina::model::hf

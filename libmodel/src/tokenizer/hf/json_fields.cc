// Reading tokenizer.json fields with errors that name the section and field.
#include "lamina/model/tokenizer.h"
#include "tokenizer/hf/pipeline.h"

namespace lamina::model::detail::hf {

void fail(std::string_view where, const std::string& what) {
  throw TokenizerError("tokenizer.json " + std::string(where) + ": " + what);
}

std::string type_of(const Json& spec, std::string_view where) {
  if (!spec.is_object()) fail(where, "expected an object");
  const auto it = spec.find("type");
  if (it == spec.end() || !it->is_string()) fail(where, "has no \"type\"");
  return it->get<std::string>();
}

std::string string_field(const Json& spec, std::string_view key, std::string_view where,
                         std::optional<std::string_view> fallback) {
  const auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) {
    if (fallback) return std::string(*fallback);
    fail(where, "has no \"" + std::string(key) + "\"");
  }
  if (!it->is_string()) fail(where, std::string("\"").append(key) + "\" is not a string");
  return it->get<std::string>();
}

bool bool_field(const Json& spec, std::string_view key, bool fallback, std::string_view where) {
  const auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) fail(where, std::string("\"").append(key) + "\" is not true or false");
  return it->get<bool>();
}

std::string pattern_field(const Json& spec, std::string_view where, bool& is_regex) {
  const auto it = spec.find("pattern");
  if (it == spec.end() || !it->is_object()) fail(where, "has no \"pattern\" object");
  if (it->contains("Regex") && (*it)["Regex"].is_string()) {
    is_regex = true;
    return (*it)["Regex"].get<std::string>();
  }
  if (it->contains("String") && (*it)["String"].is_string()) {
    is_regex = false;
    return (*it)["String"].get<std::string>();
  }
  fail(where, "\"pattern\" is neither {\"String\": ...} nor {\"Regex\": ...}");
}

VocabTable vocab_from_object(const Json& vocab, std::string_view where) {
  if (!vocab.is_object()) fail(where, "\"vocab\" is not an object");
  std::vector<std::pair<uint32_t, const std::string*>> by_id;
  by_id.reserve(vocab.size());
  uint32_t max_id = 0;
  std::size_t bytes = 0;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it->is_number_unsigned() || it->get<uint64_t>() >= uint64_t{INT32_MAX})
      fail(where, "the id of vocab entry '" + it.key() + "' is not a token id");
    const auto id = it->get<uint32_t>();
    max_id = std::max(max_id, id);
    bytes += it.key().size();
    by_id.emplace_back(id, &it.key());
  }
  std::sort(by_id.begin(), by_id.end());
  VocabTable table;
  table.texts.reserve(by_id.empty() ? 0 : max_id + 1, bytes);
  std::size_t next = 0;
  for (const auto& [id, text] : by_id) {
    if (next > id) fail(where, "token id " + std::to_string(id) + " is given to two vocab entries");
    for (; next < id; ++next) table.texts.push_back({});
    if (text->empty()) fail(where, "vocab has an empty token");
    table.texts.push_back(*text);
    ++next;
  }
  const int32_t duplicate = table.index.build(table.texts);
  if (duplicate >= 0) fail(where, "vocab repeats token " + std::to_string(duplicate));
  return table;
}

}  // namespace lamina::model::detail::hf

#include "tokenizer/hf/hf_tokenizer.h"

#include <stdexcept>

#include "lamina/model/tokenizer.h"
#include "tokenizer/unicode.h"

namespace lamina::model::detail::hf {

namespace {

Json parse(std::string_view text) {
  try {
    Json root = Json::parse(text.begin(), text.end());
    if (!root.is_object()) throw TokenizerError("tokenizer.json: not a JSON object");
    return root;
  } catch (const Json::exception& e) {
    throw TokenizerError(std::string("tokenizer.json: ") + e.what());
  }
}

const Json& section(const Json& root, const char* key) {
  static const Json kNull;
  const auto it = root.find(key);
  return it == root.end() ? kNull : *it;
}

// Pipeline sections nest (Sequence of Sequence ...) and are built recursively: a file
// nested deeper than any real one is refused before it can exhaust the stack.
void check_nesting(const Json& section, const char* name) {
  constexpr std::size_t kMaxDepth = 32;
  std::vector<std::pair<const Json*, std::size_t>> stack{{&section, 1}};
  while (!stack.empty()) {
    const auto [value, depth] = stack.back();
    stack.pop_back();
    if (depth > kMaxDepth) fail(name, "is nested more than " + std::to_string(kMaxDepth) + " levels deep");
    if (value->is_structured()) {
      for (const Json& child : *value) stack.emplace_back(&child, depth + 1);
    }
  }
}

std::vector<AddedToken> read_added_tokens(const Json& root) {
  const Json& list = section(root, "added_tokens");
  std::vector<AddedToken> out;
  if (list.is_null()) return out;
  if (!list.is_array()) fail("added_tokens", "is not a list");
  for (const Json& t : list) {
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_unsigned() || t["id"].get<uint64_t>() >= INT32_MAX)
      fail("added_tokens", "an entry has no token id");
    AddedToken a;
    a.id = t["id"].get<int32_t>();
    a.content = string_field(t, "content", "added_tokens");
    a.special = bool_field(t, "special", false, "added_tokens");
    a.single_word = bool_field(t, "single_word", false, "added_tokens");
    a.lstrip = bool_field(t, "lstrip", false, "added_tokens");
    a.rstrip = bool_field(t, "rstrip", false, "added_tokens");
    a.normalized = bool_field(t, "normalized", !a.special, "added_tokens");
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

HfTokenizer::HfTokenizer(std::string_view json_text) : added_({}) {
  const Json root = parse(json_text);
  for (const char* name : {"normalizer", "pre_tokenizer", "post_processor", "decoder"}) check_nesting(section(root, name), name);
  normalizer_ = make_normalizer(section(root, "normalizer"));
  pre_tokenizer_ = make_pre_tokenizer(section(root, "pre_tokenizer"));
  const Json& model = section(root, "model");
  if (!model.is_object()) fail("model", "is missing");
  model_ = make_model(model);
  post_processor_ = make_post_processor(section(root, "post_processor"));
  decoder_ = make_decoder(section(root, "decoder"));
  added_ = AddedVocabulary(read_added_tokens(root));
}

void HfTokenizer::encode(std::string_view input, bool add_special, bool match_special, std::vector<int32_t>& out) const {
  const std::string text = sanitize_utf8(input);
  std::vector<int32_t> ids;
  std::vector<Segment> raw;
  added_.split(text, /*normalized=*/false, match_special, raw);
  std::vector<Segment> parts;
  for (const Segment& s : raw) {
    if (s.token >= 0) {
      ids.push_back(s.token);
      continue;
    }
    std::string normalized(text.substr(s.begin, s.end - s.begin));
    if (normalizer_) normalizer_->normalize(normalized);
    parts.clear();
    added_.split(normalized, /*normalized=*/true, match_special, parts);
    for (const Segment& p : parts) {
      if (p.token >= 0) {
        ids.push_back(p.token);
      } else {
        encode_text(std::string_view(normalized).substr(p.begin, p.end - p.begin), s.begin == 0 && p.begin == 0,
                    match_special, ids);
      }
    }
  }
  if (add_special && post_processor_) post_processor_->process(ids);
  out.insert(out.end(), ids.begin(), ids.end());
}

void HfTokenizer::encode_text(std::string_view text, bool at_origin, bool, std::vector<int32_t>& out) const {
  std::vector<Piece> pieces{Piece{std::string(text), at_origin}};
  if (pre_tokenizer_) pre_tokenizer_->split(pieces);
  for (const Piece& p : pieces) model_->tokenize(p.text, out);
}

std::string HfTokenizer::decode(std::span<const int32_t> ids, bool skip_special, const DecodeMode& mode) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (const AddedToken* a = added_.find(id)) {
      if (!(skip_special && a->special)) tokens.push_back(a->content);
      continue;
    }
    const std::optional<std::string_view> t = model_->vocab().text(id);
    if (!t) throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary");
    tokens.emplace_back(*t);
  }
  if (!decoder_) {
    std::string joined;
    for (std::size_t i = 0; i < tokens.size(); ++i) joined += (i > 0 ? " " : "") + tokens[i];
    return joined;
  }
  decoder_->decode(tokens, mode);
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

int32_t HfTokenizer::vocab_size() const {
  int32_t n = model_->vocab().size();
  for (const AddedToken& a : added_.tokens()) n = std::max(n, a.id + 1);
  return n;
}

std::optional<std::string_view> HfTokenizer::token(int32_t id) const {
  if (const AddedToken* a = added_.find(id)) return std::string_view(a->content);
  return model_->vocab().text(id);
}

}  // namespace lamina::model::detail::hf

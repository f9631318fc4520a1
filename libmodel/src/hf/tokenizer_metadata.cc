#include "hf/tokenizer_metadata.h"

#include <map>
#include <optional>
#include <string_view>

#include "hf/mapped_file.h"
#include "lamina/model/config.h"

namespace lamina::model::hf {
namespace {

using gguf::Value;

// tokenizer.ggml.token_type values.
enum TokenType : int32_t { kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// The Split regexes of the byte-level pre-tokenizers llama.cpp knows, as they
// appear in tokenizer.json, and the tokenizer.ggml.pre name for each.
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kTekkenRegex =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

class TokenizerJson {
 public:
  TokenizerJson(Json root, std::string file) : root_(std::move(root)), file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& what) const { throw ModelError(file_ + ": " + what); }
  const Json& root() const { return root_; }
  const Json& model() const {
    if (!root_.contains("model") || !root_["model"].is_object()) fail("no 'model' object");
    return root_["model"];
  }
  const Json* section(const char* key) const {
    const auto it = root_.find(key);
    return it == root_.end() || it->is_null() ? nullptr : &*it;
  }
  std::string type_of(const Json* section) const {
    if (!section || !section->is_object() || !section->contains("type") || !(*section)["type"].is_string()) return "";
    return (*section)["type"].get<std::string>();
  }

  // Every token with its id: model.vocab, then added_tokens (which may repeat vocab entries).
  std::map<uint32_t, std::string> tokens_by_id() const {
    std::map<uint32_t, std::string> by_id;
    const Json& vocab = model().value("vocab", Json());
    if (!vocab.is_object()) fail("model.vocab is not an object");
    for (const auto& [text, id] : vocab.items()) add(by_id, text, json_u32(id, file_, "model.vocab[" + text + "]"));
    for (const Json& t : added_tokens()) add(by_id, t["content"].get<std::string>(), json_u32(t["id"], file_, "added_tokens id"));
    return by_id;
  }

  const Json& added_tokens() const {
    static const Json kEmpty = Json::array();
    const Json* added = section("added_tokens");
    if (!added) return kEmpty;
    if (!added->is_array()) fail("added_tokens is not a list");
    for (const Json& t : *added) {
      if (!t.is_object() || !t.contains("id") || !t.contains("content") || !t["content"].is_string())
        fail("an added_tokens entry lacks its id or content");
    }
    return *added;
  }

  // model.merges as "left right" strings: transformers 4.45+ writes pairs, in
  // which a space inside a part is spelled U+0120 as the converter does.
  std::vector<std::string> merges() const {
    const Json& m = model().value("merges", Json::array());
    if (!m.is_array()) fail("model.merges is not a list");
    std::vector<std::string> out;
    out.reserve(m.size());
    for (const Json& e : m) {
      if (e.is_string()) {
        out.push_back(e.get<std::string>());
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        std::string line;
        auto append_part = [&line](const std::string& part) {
          for (char ch : part) {
            if (ch == ' ') {
              line.append("\xC4\xA0");
            } else {
              line.push_back(ch);
            }
          }
        };
        append_part(e[0].get<std::string>());
        line.push_back(' ');
        append_part(e[1].get<std::string>());
        out.push_back(std::move(line));
      } else {
        fail("model.merges has an entry that is neither \"a b\" nor [\"a\", \"b\"]");
      }
    }
    return out;
  }

 private:
  void add(std::map<uint32_t, std::string>& by_id, const std::string& text, uint32_t id) const {
    const auto [it, inserted] = by_id.emplace(id, text);
    if (!inserted && it->second != text)
      fail("token id " + std::to_string(id) + " is both '" + it->second + "' and '" + text + "'");
  }

  Json root_;
  std::string file_;
};

// TextModel.does_token_look_special.
bool looks_special(std::string_view t) {
  auto wrapped = [&](std::string_view open, std::string_view close) {
    return t.size() >= open.size() + close.size() && t.substr(0, open.size()) == open &&
           t.substr(t.size() - close.size()) == close;
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xEF\xBD\x9C", "\xEF\xBD\x9C>") || wrapped("<unused", ">");
}

// The converter writes '▁' in a user-defined token as a space.
std::string spaces_for_marks(std::string_view s) {
  constexpr std::string_view kMark = "\xE2\x96\x81";
  std::string out;
  for (std::size_t pos = 0; pos < s.size();) {
    if (s.substr(pos, kMark.size()) == kMark) {
      out.push_back(' ');
      pos += kMark.size();
    } else {
      out.push_back(s[pos++]);
    }
  }
  return out;
}

// The tokenizer.ggml.pre name for a byte-level BPE pre-tokenizer.
std::string byte_level_pre_name(const TokenizerJson& tj) {
  const Json* pre = tj.section("pre_tokenizer");
  const std::string type = tj.type_of(pre);
  if (type == "ByteLevel") {
    if (pre->value("add_prefix_space", false)) tj.fail("pre_tokenizer ByteLevel with add_prefix_space is not supported");
    if (pre->value("use_regex", true)) return "gpt-2";
    tj.fail("pre_tokenizer ByteLevel without a regex is not supported");
  }
  if (type != "Sequence") tj.fail("pre_tokenizer '" + type + "' is not supported for byte-level BPE");
  const Json& steps = pre->value("pretokenizers", Json::array());
  if (steps.size() != 2 || tj.type_of(&steps[0]) != "Split" || tj.type_of(&steps[1]) != "ByteLevel" ||
      steps[1].value("use_regex", true) || steps[1].value("add_prefix_space", false))
    tj.fail("pre_tokenizer: only Split(regex) followed by ByteLevel(use_regex: false) is supported");
  const Json& split = steps[0];
  if (split.value("behavior", "") != "Isolated" || split.value("invert", false) || !split.contains("pattern") ||
      !split["pattern"].contains("Regex"))
    tj.fail("pre_tokenizer: the Split must isolate the matches of a regex");
  const std::string regex = split["pattern"]["Regex"].get<std::string>();
  const bool ignore_merges = tj.model().value("ignore_merges", false);
  // llama.cpp applies "ignore merges" with its llama3 names and not with its
  // smaug-bpe one, which shares the regex.
  if (regex == kLlama3Regex) return ignore_merges ? "llama-bpe" : "smaug-bpe";
  if (regex == kQwen2Regex) return "qwen2";
  if (regex == kTekkenRegex) return "tekken";
  tj.fail("pre_tokenizer: the Split regex is not one lamina knows (Llama 3, Qwen 2, Tekken): " + regex);
}

void add_byte_level_vocab(const TokenizerJson& tj, uint32_t n_vocab, MetadataBuilder& out) {
  // NFC is accepted but not applied, as llama.cpp does not apply it: text that
  // is not already in NFC can tokenize differently from transformers.
  const std::string normalizer = tj.type_of(tj.section("normalizer"));
  if (!normalizer.empty() && normalizer != "NFC") tj.fail("normalizer '" + normalizer + "' is not supported");
  const std::map<uint32_t, std::string> by_id = tj.tokens_by_id();
  std::map<uint32_t, const Json*> added;
  for (const Json& t : tj.added_tokens()) added[t["id"].get<uint32_t>()] = &t;
  if (!by_id.empty() && by_id.rbegin()->first >= n_vocab)
    tj.fail("token id " + std::to_string(by_id.rbegin()->first) + " is outside config.json's vocab_size " +
            std::to_string(n_vocab));
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (uint32_t id = 0; id < n_vocab; ++id) {
    const auto it = by_id.find(id);
    if (it == by_id.end()) {
      tokens.push_back("[PAD" + std::to_string(id) + "]");
      types.push_back(kUnused);
      continue;
    }
    std::string text = it->second;
    int32_t type = kNormal;
    if (const auto a = added.find(id); a != added.end()) {
      if (a->second->value("special", false) || looks_special(text)) {
        type = kControl;
      } else {
        text = spaces_for_marks(text);
        type = kUserDefined;
      }
    }
    tokens.push_back(std::move(text));
    types.push_back(type);
  }
  out.set("tokenizer.ggml.model", Value::string("gpt2"));
  out.set("tokenizer.ggml.pre", Value::string(byte_level_pre_name(tj)));
  out.set("tokenizer.ggml.tokens", Value::string_array(tokens));
  out.set("tokenizer.ggml.token_type", Value::i32_array(types));
  out.set("tokenizer.ggml.merges", Value::string_array(tj.merges()));
}

// Where the '▁' dummy prefix goes. A Metaspace pre-tokenizer with
// prepend_scheme "first" puts it only at the start of the text (not after
// special tokens, not before a leading space): lamina records that in
// tokenizer.lamina.prepend_scheme, which llama.cpp does not read (it always
// prefixes, as the older normalizer-based form Prepend("▁") + Replace does).
void add_space_prefix_scheme(const TokenizerJson& tj, MetadataBuilder& out) {
  const Json* pre = tj.section("pre_tokenizer");
  if (tj.type_of(pre) == "Metaspace") {
    if (pre->value("replacement", "") != "\xE2\x96\x81") tj.fail("pre_tokenizer Metaspace must replace spaces with '\xE2\x96\x81'");
    if (pre->value("split", false)) tj.fail("pre_tokenizer Metaspace with split: true is not supported");
    const std::string scheme = pre->value("prepend_scheme", "always");
    if (scheme == "never") {
      out.set("tokenizer.ggml.add_space_prefix", Value::boolean(false));
    } else if (scheme == "first") {
      out.set("tokenizer.lamina.prepend_scheme", Value::string("first"));
    } else if (scheme != "always") {
      tj.fail("pre_tokenizer Metaspace prepend_scheme '" + scheme + "' is not supported");
    }
    return;
  }
  if (pre) tj.fail("pre_tokenizer '" + tj.type_of(pre) + "' is not supported with byte fallback");
  // The Llama 2 form: normalizer Sequence [Prepend("▁"), Replace(" ", "▁")].
  const Json* norm = tj.section("normalizer");
  const Json steps = norm ? norm->value("normalizers", Json::array()) : Json::array();
  const bool llama2 = tj.type_of(norm) == "Sequence" && steps.size() == 2 && tj.type_of(&steps[0]) == "Prepend" &&
                      steps[0].value("prepend", "") == "\xE2\x96\x81" && tj.type_of(&steps[1]) == "Replace";
  if (!llama2) tj.fail("a byte-fallback BPE needs a Metaspace pre-tokenizer or the Prepend/Replace normalizer");
}

bool is_byte_token(std::string_view t) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); };
  return t.size() == 6 && t.substr(0, 3) == "<0x" && hex(t[3]) && hex(t[4]) && t[5] == '>';
}

// BPE with byte fallback over '▁'-spelled text (Llama 2 style tokenizer.json).
// Token types as the converter's LlamaHfVocab derives them. Its scores are all
// -1000, which would make a score-ordered encoder merge left to right; the
// scores here follow the merge order instead (the token made by merge r
// scores -r), which is what a SentencePiece BPE model itself stores.
void add_sentencepiece_vocab(const TokenizerJson& tj, uint32_t n_vocab, MetadataBuilder& out) {
  const std::map<uint32_t, std::string> by_id = tj.tokens_by_id();
  if (!by_id.empty() && by_id.rbegin()->first >= n_vocab)
    tj.fail("token id " + std::to_string(by_id.rbegin()->first) + " is outside config.json's vocab_size " +
            std::to_string(n_vocab));
  std::map<uint32_t, bool> added_special;
  for (const Json& t : tj.added_tokens()) added_special[t["id"].get<uint32_t>()] = t.value("special", false);
  std::map<std::string, float> merge_score;
  const std::vector<std::string> merges = tj.merges();
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const std::size_t space = merges[r].find(' ', 1);
    if (space == std::string::npos) tj.fail("model.merges[" + std::to_string(r) + "] has no space");
    std::string joined = merges[r].substr(0, space) + merges[r].substr(space + 1);
    merge_score.emplace(std::move(joined), -static_cast<float>(r));
  }
  // Tokens no merge makes (characters, bytes, specials) never win a merge.
  constexpr float kNotMerged = -1e9f;
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (uint32_t id = 0; id < n_vocab; ++id) {
    const auto it = by_id.find(id);
    if (it == by_id.end()) {
      tokens.push_back("[PAD" + std::to_string(id) + "]");
      scores.push_back(kNotMerged);
      types.push_back(kUnused);
      continue;
    }
    const std::string& text = it->second;
    const auto special = added_special.find(id);
    int32_t type = kNormal;
    if (is_byte_token(text)) {
      type = kByte;
    } else if (special != added_special.end()) {
      type = special->second ? kControl : kUserDefined;
    }
    const auto m = merge_score.find(text);
    tokens.push_back(text);
    scores.push_back(m != merge_score.end() && type == kNormal ? m->second : kNotMerged);
    types.push_back(type);
  }
  out.set("tokenizer.ggml.model", Value::string("llama"));
  out.set("tokenizer.ggml.pre", Value::string("default"));
  out.set("tokenizer.ggml.tokens", Value::string_array(tokens));
  out.set("tokenizer.ggml.scores", Value::f32_array(scores));
  out.set("tokenizer.ggml.token_type", Value::i32_array(types));
  add_space_prefix_scheme(tj, out);
}

}  // namespace

void add_tokenizer_metadata(const std::filesystem::path& dir, const HfConfig& config, const HfArchitecture& arch,
                            MetadataBuilder& out) {
  const auto path = dir / "tokenizer.json";
  if (!std::filesystem::exists(path)) throw ModelError(dir.string() + ": no tokenizer.json (it is required)");
  const TokenizerJson tj(parse_json_object(read_text_file(path), path.string()), path.string());
  const Json& model = tj.model();
  if (model.value("type", "") != "BPE") tj.fail("model type '" + model.value("type", "?") + "' is not supported (BPE only)");
  const std::string decoder = tj.type_of(tj.section("decoder"));
  const bool byte_fallback = model.value("byte_fallback", false);
  if (!byte_fallback && decoder == "ByteLevel") {
    add_byte_level_vocab(tj, arch.n_vocab, out);
  } else if (byte_fallback && decoder == "Sequence") {
    add_sentencepiece_vocab(tj, arch.n_vocab, out);
  } else {
    tj.fail("a BPE tokenizer with decoder '" + decoder + "'" + (byte_fallback ? " and byte fallback" : "") +
            " is neither byte-level nor SentencePiece-style");
  }
  add_special_tokens(dir, tj.root(), config, arch.n_vocab, out);
}

}  // namespace lamina::model::hf

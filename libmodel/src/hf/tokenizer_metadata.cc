#include "hf/tokenizer_metadata.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
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
// OpenAI's o200k (GPT-4o, gpt-oss).
constexpr std::string_view kO200kRegex =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek V3's three splits.
constexpr std::string_view kDeepseekV3Regexes[] = {
    R"(\p{N}{1,3})",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^)" "\r\n" R"(\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[)" "\r\n" R"(]*|\s*[)" "\r\n" R"(]+|\s+(?!\S)|\s+)",
};

class TokenizerJson;
bool is_byte_token(std::string_view t);

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

// The tokenizer.ggml.pre name llama.cpp gives a byte-level BPE pre-tokenizer, from
// its Split regexes; "default" where none fits (lamina itself runs the file's own
// pipeline from tokenizer.huggingface.json).
std::string byte_level_pre_name(const TokenizerJson& tj) {
  const Json* pre = tj.section("pre_tokenizer");
  std::vector<std::string> regexes;
  bool byte_level_regex = false;
  std::vector<const Json*> steps;
  if (tj.type_of(pre) == "Sequence" && pre->contains("pretokenizers") && (*pre)["pretokenizers"].is_array()) {
    for (const Json& step : (*pre)["pretokenizers"]) steps.push_back(&step);
  } else if (pre) {
    steps.push_back(pre);
  }
  for (const Json* step : steps) {
    const std::string type = tj.type_of(step);
    if (type == "ByteLevel") {
      byte_level_regex = step->value("use_regex", true);
    } else if (type == "Split" && step->contains("pattern") && (*step)["pattern"].is_object() &&
               (*step)["pattern"].contains("Regex") && (*step)["pattern"]["Regex"].is_string()) {
      regexes.push_back((*step)["pattern"]["Regex"].get<std::string>());
    } else {
      return "default";
    }
  }
  if (regexes.empty()) return byte_level_regex ? "gpt-2" : "default";
  if (byte_level_regex) return "default";
  if (regexes.size() == 3 && std::equal(regexes.begin(), regexes.end(), std::begin(kDeepseekV3Regexes)))
    return "deepseek-v3";
  if (regexes.size() != 1) return "default";
  const std::string& regex = regexes[0];
  // llama.cpp applies "ignore merges" with its llama3 names and not with its
  // smaug-bpe one, which shares the regex.
  if (regex == kLlama3Regex) return tj.model().value("ignore_merges", false) ? "llama-bpe" : "smaug-bpe";
  if (regex == kQwen2Regex) return "qwen2";
  if (regex == kTekkenRegex) return "tekken";
  if (regex == kO200kRegex) return "gpt-4o";
  return "default";
}

// tokenizer.ggml.tokens and token_type for every id below n_vocab: ids no token has
// become "[PADn]" (UNUSED); added tokens are CONTROL when special, else USER_DEFINED
// (Hugging Face's own flag decides, not the look of the text as in llama.cpp's
// converter: a non-special token such as DeepSeek's "<｜fim▁hole｜>" is kept by
// decodes that skip special tokens, and matched in the text as written); the other
// tokens take `model_type(text)`. `on_token(id, text, type)` sees each real token.
template <typename OnToken>
void add_token_list(const TokenizerJson& tj, const std::map<uint32_t, std::string>& by_id, uint32_t n_vocab,
                    int32_t (*model_type)(std::string_view), OnToken on_token, MetadataBuilder& out) {
  if (!by_id.empty() && by_id.rbegin()->first >= n_vocab)
    tj.fail("token id " + std::to_string(by_id.rbegin()->first) + " is outside config.json's vocab_size " +
            std::to_string(n_vocab));
  std::map<uint32_t, bool> added_special;
  for (const Json& t : tj.added_tokens()) added_special[t["id"].get<uint32_t>()] = t.value("special", false);
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (uint32_t id = 0; id < n_vocab; ++id) {
    const auto it = by_id.find(id);
    if (it == by_id.end()) {
      tokens.push_back("[PAD" + std::to_string(id) + "]");
      types.push_back(kUnused);
      on_token(id, std::string_view(), kUnused);
      continue;
    }
    const auto special = added_special.find(id);
    const int32_t type = special == added_special.end() ? model_type(it->second) : special->second ? kControl : kUserDefined;
    tokens.push_back(it->second);
    types.push_back(type);
    on_token(id, std::string_view(it->second), type);
  }
  out.set("tokenizer.ggml.tokens", Value::string_array(tokens));
  out.set("tokenizer.ggml.token_type", Value::i32_array(types));
}

int32_t normal_type(std::string_view) { return kNormal; }
int32_t byte_or_normal_type(std::string_view t) { return is_byte_token(t) ? kByte : kNormal; }

void add_byte_level_vocab(const TokenizerJson& tj, uint32_t n_vocab, MetadataBuilder& out) {
  out.set("tokenizer.ggml.model", Value::string("gpt2"));
  out.set("tokenizer.ggml.pre", Value::string(byte_level_pre_name(tj)));
  add_token_list(tj, tj.tokens_by_id(), n_vocab, normal_type, [](uint32_t, std::string_view, int32_t) {}, out);
  out.set("tokenizer.ggml.merges", Value::string_array(tj.merges()));
}

// Where the '▁' dummy prefix goes. A Metaspace pre-tokenizer with
// prepend_scheme "first" puts it only at the start of the text (not after
// special tokens, not before a leading space): lamina records that in
// tokenizer.lamina.prepend_scheme, which llama.cpp does not read (it always
// prefixes, as the older normalizer-based form Prepend("▁") + Replace does).
// Without either form (Gemma's Replace alone) there is no prefix.
void add_space_prefix_scheme(const TokenizerJson& tj, MetadataBuilder& out) {
  const Json* pre = tj.section("pre_tokenizer");
  if (tj.type_of(pre) == "Metaspace") {
    std::string scheme = pre->value("prepend_scheme", "always");
    if (!pre->contains("prepend_scheme") && !pre->value("add_prefix_space", true)) scheme = "never";
    if (scheme == "never") {
      out.set("tokenizer.ggml.add_space_prefix", Value::boolean(false));
    } else if (scheme == "first") {
      out.set("tokenizer.lamina.prepend_scheme", Value::string("first"));
    }
    return;
  }
  const Json* norm = tj.section("normalizer");
  std::vector<const Json*> steps;
  if (tj.type_of(norm) == "Sequence" && norm->contains("normalizers") && (*norm)["normalizers"].is_array()) {
    for (const Json& step : (*norm)["normalizers"]) steps.push_back(&step);
  } else if (norm) {
    steps.push_back(norm);
  }
  const bool prepends = std::any_of(steps.begin(), steps.end(), [&](const Json* step) {
    return tj.type_of(step) == "Prepend" && step->value("prepend", "") == "\xE2\x96\x81";
  });
  if (!prepends) out.set("tokenizer.ggml.add_space_prefix", Value::boolean(false));
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
  std::unordered_map<std::string, float> merge_score;
  const std::vector<std::string> merges = tj.merges();
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const std::size_t space = merges[r].find(' ', 1);
    if (space == std::string::npos) tj.fail("model.merges[" + std::to_string(r) + "] has no space");
    std::string joined = merges[r].substr(0, space) + merges[r].substr(space + 1);
    merge_score.emplace(std::move(joined), -static_cast<float>(r));
  }
  // Tokens no merge makes (characters, bytes, specials) never win a merge; a
  // non-special added token that merges also make (Gemma's runs of '▁') keeps its
  // place among them.
  constexpr float kNotMerged = -1e9f;
  std::vector<float> scores;
  out.set("tokenizer.ggml.model", Value::string("llama"));
  out.set("tokenizer.ggml.pre", Value::string("default"));
  add_token_list(tj, tj.tokens_by_id(), n_vocab, byte_or_normal_type,
                 [&](uint32_t, std::string_view text, int32_t type) {
                   const auto m = merge_score.find(std::string(text));
                   const bool mergeable = type == kNormal || type == kUserDefined;
                   scores.push_back(m != merge_score.end() && mergeable ? m->second : kNotMerged);
                 },
                 out);
  out.set("tokenizer.ggml.scores", Value::f32_array(scores));
  add_space_prefix_scheme(tj, out);
}

// WordPiece, Unigram and WordLevel vocabularies: the tokens (and Unigram's scores)
// with their types; tokenizer.huggingface.json carries the rest.
void add_plain_vocab(const TokenizerJson& tj, uint32_t n_vocab, const std::string& model_name, MetadataBuilder& out) {
  std::map<uint32_t, std::string> by_id;
  std::vector<float> scores(n_vocab, 0.0f);
  const Json& vocab = tj.model().value("vocab", Json());
  if (vocab.is_array()) {
    for (std::size_t id = 0; id < vocab.size(); ++id) {
      const Json& e = vocab[id];
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number()) tj.fail("model.vocab has an entry that is not [piece, score]");
      by_id.emplace(static_cast<uint32_t>(id), e[0].get<std::string>());
      if (id < n_vocab) scores[id] = e[1].get<float>();
    }
    for (const Json& t : tj.added_tokens()) by_id[json_u32(t["id"], "", "added_tokens id")] = t["content"].get<std::string>();
  } else {
    by_id = tj.tokens_by_id();
  }
  out.set("tokenizer.ggml.model", Value::string(model_name));
  out.set("tokenizer.ggml.pre", Value::string("default"));
  add_token_list(tj, by_id, n_vocab, byte_or_normal_type, [](uint32_t, std::string_view, int32_t) {}, out);
  if (vocab.is_array()) out.set("tokenizer.ggml.scores", Value::f32_array(scores));
}

// One past the largest token id of the model and the added tokens.
uint32_t vocab_size_of(const TokenizerJson& tj, const std::string& file) {
  uint32_t n = 0;
  const Json& vocab = tj.model().value("vocab", Json());
  if (vocab.is_array()) {
    n = static_cast<uint32_t>(vocab.size());
  } else if (vocab.is_object()) {
    for (const auto& [text, id] : vocab.items()) n = std::max(n, json_u32(id, file, "model.vocab[" + text + "]") + 1);
  }
  for (const Json& t : tj.added_tokens()) n = std::max(n, json_u32(t["id"], file, "added_tokens id") + 1);
  return n;
}

// transformers' Llama and Gemma tokenizer classes rebuild the post-processor from
// tokenizer_config.json's add_bos_token / add_eos_token (defaults: BOS, no EOS), whatever
// tokenizer.json says: the pipeline lamina runs gets that template too.
// Returns the rebuilt tokenizer.json, or nullopt when the class does not do this.
std::optional<Json> apply_config_special_tokens(const Json& original, const Json& tokenizer_config) {
  static const std::string_view kClasses[] = {"LlamaTokenizer",     "LlamaTokenizerFast", "CodeLlamaTokenizer",
                                               "CodeLlamaTokenizerFast", "GemmaTokenizer",  "GemmaTokenizerFast",
                                               "CohereTokenizerFast"};
  const std::string cls = tokenizer_config.value("tokenizer_class", "");
  if (std::find(std::begin(kClasses), std::end(kClasses), cls) == std::end(kClasses)) return std::nullopt;
  Json root = original;
  auto flag = [&](const char* key, bool fallback) {
    const auto it = tokenizer_config.find(key);
    return it != tokenizer_config.end() && it->is_boolean() ? it->get<bool>() : fallback;
  };
  auto token = [&](const char* key) -> std::optional<std::pair<std::string, uint32_t>> {
    const auto it = tokenizer_config.find(key);
    std::string text;
    if (it != tokenizer_config.end() && it->is_string()) text = it->get<std::string>();
    if (it != tokenizer_config.end() && it->is_object()) text = it->value("content", "");
    if (text.empty()) return std::nullopt;
    for (const Json& t : root.value("added_tokens", Json::array())) {
      if (t.value("content", "") == text && t.contains("id") && t["id"].is_number_unsigned()) return std::pair(text, t["id"].get<uint32_t>());
    }
    const Json& vocab = root["model"].value("vocab", Json());
    if (vocab.is_object() && vocab.contains(text) && vocab[text].is_number_unsigned()) return std::pair(text, vocab[text].get<uint32_t>());
    return std::nullopt;
  };
  Json single = Json::array(), special_tokens = Json::object();
  auto add_special = [&](const std::pair<std::string, uint32_t>& t) {
    single.push_back({{"SpecialToken", {{"id", t.first}, {"type_id", 0}}}});
    special_tokens[t.first] = {{"id", t.first}, {"ids", {t.second}}, {"tokens", {t.first}}};
  };
  const auto bos = token("bos_token"), eos = token("eos_token");
  if (flag("add_bos_token", true) && bos) add_special(*bos);
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (flag("add_eos_token", false) && eos) add_special(*eos);
  root["post_processor"] = {{"type", "TemplateProcessing"}, {"single", single}, {"pair", single}, {"special_tokens", special_tokens}};
  return root;
}

}  // namespace

void add_tokenizer_metadata(const std::filesystem::path& dir, const HfConfig& config, const HfArchitecture& arch,
                            MetadataBuilder& out) {
  const auto path = dir / "tokenizer.json";
  if (!std::filesystem::exists(path)) throw ModelError(dir.string() + ": no tokenizer.json (it is required)");
  const std::string text = read_text_file(path);
  TokenizerJson tj(parse_json_object(text, path.string()), path.string());
  const Json& model = tj.model();
  const uint32_t n_vocab = arch.n_vocab != 0 ? arch.n_vocab : vocab_size_of(tj, path.string());
  const std::string type = model.value("type", "BPE");
  const std::string decoder = tj.type_of(tj.section("decoder"));
  if (type == "BPE" && decoder == "ByteLevel" && !model.value("byte_fallback", false)) {
    add_byte_level_vocab(tj, n_vocab, out);
  } else if (type == "BPE") {
    add_sentencepiece_vocab(tj, n_vocab, out);
  } else if (type == "WordPiece") {
    add_plain_vocab(tj, n_vocab, "bert", out);
  } else if (type == "Unigram") {
    add_plain_vocab(tj, n_vocab, "t5", out);
  } else if (type == "WordLevel") {
    add_plain_vocab(tj, n_vocab, "wordlevel", out);
  } else {
    tj.fail("model type '" + type + "' is not one of BPE, Unigram, WordPiece, WordLevel");
  }
  add_special_tokens(dir, tj.root(), config, n_vocab, out);

  Json tokenizer_config = Json::object();
  if (const auto config_path = dir / "tokenizer_config.json"; std::filesystem::exists(config_path))
    tokenizer_config = parse_json_object(read_text_file(config_path), config_path.string());
  const std::optional<Json> rebuilt = apply_config_special_tokens(tj.root(), tokenizer_config);
  out.set("tokenizer.huggingface.json", Value::string(rebuilt ? rebuilt->dump() : text));
}

}  // namespace lamina::model::hf

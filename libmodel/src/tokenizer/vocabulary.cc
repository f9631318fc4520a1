#include "tokenizer/vocabulary.h"

#include <algorithm>
#include <cstdio>

#include "lamina/gguf/file.h"
#include "tokenizer/metadata.h"
#include "tokenizer/pre_tokenizer.h"

namespace lamina::model::detail {

namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kPreKey = "tokenizer.ggml.pre";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";

// End-of-turn tokens that conversions do not always declare in the metadata; the
// reference tokenizer recognises them by their text.
constexpr std::string_view kEndOfTurnTexts[] = {
    "<|eot_id|>", "<|im_end|>",      "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<EOT>",      "<|end_of_text|>", "_<EOT>",  "<｜end▁of▁sentence｜>",
};
constexpr std::string_view kEndOfMessageText = "<|eom_id|>";

TokenizerKind kind_of_model(const std::string& model, bool hf_pipeline) {
  if (model == "llama") return TokenizerKind::SentencePiece;
  if (model == "gpt2") return TokenizerKind::BytePairEncoding;
  if (model == "bert") return TokenizerKind::WordPiece;
  if (hf_pipeline && model == "t5") return TokenizerKind::Unigram;
  if (hf_pipeline && model == "wordlevel") return TokenizerKind::WordLevel;
  throw TokenizerError(std::string(kModelKey) + ": unsupported tokenizer '" + model +
                       "' (supported: llama, gpt2, bert)");
}

void read_tokens(const gguf::GgufFile& file, Vocabulary& v, bool hf_pipeline) {
  v.texts = required_string_table(file, kTokensKey);
  if (v.texts.empty()) throw TokenizerError(std::string(kTokensKey) + ": the vocabulary is empty");
  if (v.texts.size() > static_cast<std::size_t>(INT32_MAX)) {
    throw TokenizerError(std::string(kTokensKey) + ": too many tokens");
  }
  const std::size_t n = v.texts.size();
  auto check_length = [&](std::string_view key, std::size_t size) {
    if (size != n) {
      throw TokenizerError(std::string(key) + ": " + std::to_string(size) + " entries for " +
                           std::to_string(n) + " tokens");
    }
  };

  v.scores.assign(n, 0.0f);
  if (const gguf::Value* scores = file.find(kScoresKey)) {
    const bool integers = scores->type() == gguf::ValueType::Array &&
                          scores->as_array().element_type() == gguf::ValueType::Int32;
    if (integers) {
      const std::vector<int32_t> s = read_metadata([&] { return file.get_i32_array(kScoresKey); });
      check_length(kScoresKey, s.size());
      std::transform(s.begin(), s.end(), v.scores.begin(), [](int32_t x) { return float(x); });
    } else {
      v.scores = read_metadata([&] { return file.get_f32_array(kScoresKey); });
      check_length(kScoresKey, v.scores.size());
    }
  }

  v.types.assign(n, TokenType::Normal);
  if (file.contains(kTypesKey)) {
    const std::vector<int32_t> t = read_metadata([&] { return file.get_i32_array(kTypesKey); });
    check_length(kTypesKey, t.size());
    for (std::size_t i = 0; i < n; ++i) {
      v.types[i] = t[i] >= 1 && t[i] <= 6 ? static_cast<TokenType>(t[i]) : TokenType::Undefined;
    }
  }

  const int32_t duplicate = v.index.build(v.texts);
  // A Hugging Face Unigram vocabulary may list a piece twice; its pipeline decides.
  if (duplicate >= 0 && !hf_pipeline) {
    throw TokenizerError(std::string(kTokensKey) + ": token " + std::to_string(duplicate) +
                         " repeats the text of token " +
                         std::to_string(v.find(v.texts[static_cast<std::size_t>(duplicate)])));
  }
  for (std::size_t i = 0; i < n; ++i) v.max_token_bytes = std::max(v.max_token_bytes, v.texts[i].size());
}

// A special id from `key`, else `fallback` when that is inside the vocabulary. The
// value 0xFFFFFFFF (or -1) means "no such token". An id past the vocabulary is an error
// for the tokens encoding and generation rely on, and ignored for the others, as the
// reference does.
int32_t read_special_id(const gguf::GgufFile& file, const Vocabulary& v, std::string_view key,
                        int32_t fallback, bool required_in_range) {
  const std::optional<int64_t> value = optional_integer(file, key);
  if (!value) return v.contains(fallback) ? fallback : kNoToken;
  if (*value == -1 || *value == int64_t{0xFFFFFFFF}) return kNoToken;
  if (*value < 0 || *value >= v.size()) {
    if (!required_in_range) return kNoToken;
    throw TokenizerError(std::string(key) + ": token id " + std::to_string(*value) +
                         " is outside the vocabulary of " + std::to_string(v.size()) + " tokens");
  }
  return static_cast<int32_t>(*value);
}

void read_special_ids(const gguf::GgufFile& file, Vocabulary& v) {
  SpecialIds defaults;
  switch (v.kind) {
    case TokenizerKind::SentencePiece:
      defaults.bos = 1;
      defaults.eos = 2;
      defaults.unk = 0;
      break;
    case TokenizerKind::WordPiece:
      defaults.cls = 101;
      defaults.unk = 100;
      defaults.sep = 102;
      defaults.pad = 0;
      defaults.mask = 103;
      break;
    case TokenizerKind::BytePairEncoding:
    case TokenizerKind::Unigram:
    case TokenizerKind::WordLevel:
      break;
  }
  SpecialIds& ids = v.ids;
  ids.cls = read_special_id(file, v, "tokenizer.ggml.cls_token_id", defaults.cls, false);
  // BERT's sequence start is its CLS token.
  defaults.bos = v.kind == TokenizerKind::WordPiece ? ids.cls : defaults.bos;
  ids.bos = read_special_id(file, v, "tokenizer.ggml.bos_token_id", defaults.bos, true);
  ids.eos = read_special_id(file, v, "tokenizer.ggml.eos_token_id", defaults.eos, true);
  ids.eot = read_special_id(file, v, "tokenizer.ggml.eot_token_id", kNoToken, true);
  ids.eom = read_special_id(file, v, "tokenizer.ggml.eom_token_id", kNoToken, true);
  ids.unk = read_special_id(file, v, "tokenizer.ggml.unknown_token_id", defaults.unk, true);
  // "seperator" is the key's spelling in GGUF files.
  ids.sep = read_special_id(file, v, "tokenizer.ggml.seperator_token_id", defaults.sep, false);
  ids.pad = read_special_id(file, v, "tokenizer.ggml.padding_token_id", defaults.pad, false);
  ids.mask = read_special_id(file, v, "tokenizer.ggml.mask_token_id", defaults.mask, false);
}

void read_flags(const gguf::GgufFile& file, Vocabulary& v, bool hf_pipeline) {
  const bool spm = v.kind == TokenizerKind::SentencePiece;
  const bool wpm = v.kind == TokenizerKind::WordPiece;
  bool bos_default = spm || wpm;
  if (v.kind == TokenizerKind::BytePairEncoding) {
    const PreTokenizerRules* rules = find_pre_tokenizer_rules(v.pre_name);
    bos_default = rules != nullptr && rules->add_bos;
  }
  v.add_bos = bool_or(file, "tokenizer.ggml.add_bos_token", bos_default);
  v.add_eos = bool_or(file, "tokenizer.ggml.add_eos_token", false);
  v.add_sep = bool_or(file, "tokenizer.ggml.add_sep_token", wpm);
  // Only SentencePiece vocabularies use the dummy prefix.
  v.add_space_prefix = spm && bool_or(file, "tokenizer.ggml.add_space_prefix", true);
  const std::string scheme = optional_string(file, "tokenizer.lamina.prepend_scheme").value_or("always");
  if (scheme != "always" && scheme != "first")
    throw TokenizerError("tokenizer.lamina.prepend_scheme: unknown scheme '" + scheme + "' (always, first)");
  v.space_prefix_at_start_only = v.add_space_prefix && scheme == "first";
  v.remove_extra_whitespaces = bool_or(file, "tokenizer.ggml.remove_extra_whitespaces", false);
  v.lowercase = bool_or(file, "tokenizer.ggml.normalizer.lowercase", true);
  v.strip_accents = bool_or(file, "tokenizer.ggml.normalizer.strip_accents", v.lowercase);

  // With a Hugging Face pipeline its post-processor adds the tokens; the flags only
  // describe it, and one whose token has no id here (RoBERTa's <s>) says nothing.
  if (hf_pipeline) {
    v.add_bos = v.add_bos && v.ids.bos != kNoToken;
    v.add_eos = v.add_eos && v.ids.eos != kNoToken;
    v.add_sep = v.add_sep && v.ids.sep != kNoToken;
  }
  auto require = [](bool flag, int32_t id, const char* flag_key, const char* id_key) {
    if (flag && id == kNoToken) {
      throw TokenizerError(std::string(flag_key) + " is true but the vocabulary has no token " +
                           id_key);
    }
  };
  require(v.add_bos, v.ids.bos, "tokenizer.ggml.add_bos_token", "tokenizer.ggml.bos_token_id");
  require(v.add_eos, v.ids.eos, "tokenizer.ggml.add_eos_token", "tokenizer.ggml.eos_token_id");
  require(wpm && v.add_sep, v.ids.sep, "tokenizer.ggml.add_sep_token",
          "tokenizer.ggml.seperator_token_id");
}

// EOT/EOM by text where the metadata names none; all end-of-turn tokens end generation
// and are control tokens whatever their declared type.
void find_end_of_generation(Vocabulary& v) {
  std::vector<int32_t> eog;
  for (std::string_view text : kEndOfTurnTexts) {
    const int32_t id = v.find(text);
    if (id >= 0) eog.push_back(id);
  }
  if (v.ids.eot == kNoToken && !eog.empty()) v.ids.eot = *std::min_element(eog.begin(), eog.end());
  const int32_t eom = v.find(kEndOfMessageText);
  if (eom >= 0) {
    eog.push_back(eom);
    if (v.ids.eom == kNoToken) v.ids.eom = eom;
  }
  for (int32_t id : eog) v.types[static_cast<std::size_t>(id)] = TokenType::Control;
  for (int32_t id : {v.ids.eos, v.ids.eot, v.ids.eom}) {
    if (id != kNoToken) eog.push_back(id);
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  v.eog_ids = std::move(eog);
}

// llama.cpp gives Phi-3 vocabularies, recognised by general.name, special tokens that
// swallow the whitespace after them (its RSTRIP attribute), as Phi-3's own tokenizer
// does for its role tokens; the metadata has no other place for it.
void mark_right_strippers(const gguf::GgufFile& file, Vocabulary& v) {
  std::string name = optional_string(file, "general.name").value_or("");
  std::transform(name.begin(), name.end(), name.begin(),
                 [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
  if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) return;
  v.right_strippers.assign(v.texts.size(), false);
  for (int32_t id = 0; id < v.size(); ++id) v.right_strippers[static_cast<std::size_t>(id)] = v.is_special(id);
  auto set = [&](std::string_view text, bool value) {
    const int32_t id = v.find(text);
    if (id >= 0) v.right_strippers[static_cast<std::size_t>(id)] = value;
  };
  set("</s>", true);
  for (std::string_view text : {"<unk>", "<s>", "<|endoftext|>"}) set(text, false);
}

void find_byte_tokens(Vocabulary& v) {
  v.byte_tokens.fill(kNoToken);
  if (v.kind != TokenizerKind::SentencePiece) return;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    int32_t id = v.find(name);
    if (id < 0) id = v.find(std::string(1, static_cast<char>(b)));
    v.byte_tokens[static_cast<std::size_t>(b)] = id;
  }
}

}  // namespace

Vocabulary load_vocabulary(const gguf::GgufFile& file, bool hf_pipeline) {
  Vocabulary v;
  const std::optional<std::string> model = optional_string(file, kModelKey);
  if (!model) {
    throw TokenizerError("tokenizer metadata: missing key '" + std::string(kModelKey) + "'");
  }
  v.model_name = *model;
  v.kind = kind_of_model(v.model_name, hf_pipeline);
  if (const std::optional<std::string> pre = optional_string(file, kPreKey)) v.pre_name = *pre;
  const bool bpe = v.kind == TokenizerKind::BytePairEncoding;
  if (bpe && !hf_pipeline && find_pre_tokenizer_rules(v.pre_name) == nullptr) {
    throw TokenizerError(std::string(kPreKey) + ": unknown pre-tokenizer '" + v.pre_name + "'");
  }

  read_tokens(file, v, hf_pipeline);
  read_special_ids(file, v);
  read_flags(file, v, hf_pipeline);
  find_end_of_generation(v);
  mark_right_strippers(file, v);
  find_byte_tokens(v);
  return v;
}

}  // namespace lamina::model::detail

// Internal: the vocabulary and tokenizer settings read from tokenizer.ggml.* metadata.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lamina/model/tokenizer.h"
#include "tokenizer/text_index.h"

namespace lamina::gguf {
class GgufFile;
}

namespace lamina::model::detail {

struct SpecialIds {
  int32_t bos = kNoToken;
  int32_t eos = kNoToken;
  int32_t eot = kNoToken;
  int32_t eom = kNoToken;
  int32_t unk = kNoToken;
  int32_t sep = kNoToken;
  int32_t pad = kNoToken;
  int32_t cls = kNoToken;
  int32_t mask = kNoToken;
};

struct Vocabulary {
  TokenizerKind kind = TokenizerKind::SentencePiece;
  std::string model_name;
  std::string pre_name = "default";

  StringTable texts;
  std::vector<float> scores;
  std::vector<TokenType> types;
  TextIndex index;
  std::size_t max_token_bytes = 0;

  SpecialIds ids;
  std::vector<int32_t> eog_ids;  // sorted

  bool add_bos = false;
  bool add_eos = false;
  bool add_sep = false;
  bool add_space_prefix = false;
  bool space_prefix_at_start_only = false;  // see Tokenizer::space_prefix_at_start_only
  // Read but not applied: llama.cpp's SentencePiece encoder ignores it too, and ids must
  // match it.
  bool remove_extra_whitespaces = false;
  bool lowercase = true;      // WordPiece normaliser
  bool strip_accents = true;  // WordPiece normaliser

  // Tokens that swallow the whitespace after them; empty when none does.
  std::vector<bool> right_strippers;

  // SentencePiece byte fallback: the token of each byte ("<0xNN>", or the byte itself).
  std::array<int32_t, 256> byte_tokens{};

  int32_t size() const { return static_cast<int32_t>(texts.size()); }
  int32_t find(std::string_view text) const { return index.find(text, texts); }
  bool contains(int32_t id) const { return id >= 0 && id < size(); }
  TokenType type(int32_t id) const { return types[static_cast<std::size_t>(id)]; }
  // Whether whitespace right after the token belongs to it (llama.cpp's RSTRIP attribute).
  bool strips_right(int32_t id) const {
    return !right_strippers.empty() && right_strippers[static_cast<std::size_t>(id)];
  }
  // Tokens the encoder keeps whole: control, unknown and user-defined.
  bool is_special(int32_t id) const {
    const TokenType t = type(id);
    return t == TokenType::Control || t == TokenType::Unknown || t == TokenType::UserDefined;
  }
};

// Reads tokenizer.ggml.model, tokens, scores, token_type, the special ids and flags.
// Merges and the pre-tokenizer are read by the BPE model. With `hf_pipeline` (the file
// carries tokenizer.huggingface.json, which does the encoding), the pre-tokenizer name
// is not needed and the Unigram and WordLevel models are accepted. Throws TokenizerError.
Vocabulary load_vocabulary(const gguf::GgufFile& file, bool hf_pipeline);

}  // namespace lamina::model::detail

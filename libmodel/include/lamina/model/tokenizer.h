// Tokenizers built from a GGUF file. When the file carries tokenizer.huggingface.json
// (a Hugging Face model folder read as GGUF does, and lamina-convert writes it), that
// pipeline encodes and decodes exactly as the Hugging Face `tokenizers` library does.
// Otherwise the tokenizer.ggml.* metadata does: SentencePiece-style ("llama"),
// byte-level BPE ("gpt2") and WordPiece ("bert"), with token ids as llama.cpp's
// tokenizer gives for the same file.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lamina/model/export.h"

namespace lamina::gguf {
class GgufFile;
}

namespace lamina::model {

// Missing, inconsistent or unsupported tokenizer metadata. The message names the key.
class LAMINA_MODEL_API TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int32_t kNoToken = -1;

enum class TokenizerKind {
  SentencePiece,     // tokenizer.ggml.model = "llama": merges by score, byte fallback
  BytePairEncoding,  // "gpt2": byte-level BPE with ranked merges and a regex pre-tokenizer
  WordPiece,         // "bert": greedy longest match, BERT basic normalisation
  Unigram,           // "t5": best-scoring segmentation (tokenizer.huggingface.json only)
  WordLevel,         // "wordlevel": whole words (tokenizer.huggingface.json only)
};

// The values of tokenizer.ggml.token_type.
enum class TokenType : uint8_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

struct LAMINA_MODEL_API DecodeOptions {
  // Control and unknown tokens are rendered as their text; otherwise they render as
  // nothing (Hugging Face's skip_special_tokens).
  bool render_special = true;
  // Decode as a whole text, so that decode(encode(s)) == s: SentencePiece vocabularies
  // with add_space_prefix drop the one space the encoder adds at the start (and, for
  // GGUF metadata, after each special token); a Hugging Face decoder applies its
  // start-of-text steps. Turn it off to render a stretch from the middle of a text.
  bool strip_space_prefix = true;
};

// Immutable after construction; copies share the vocabulary, and every const member is
// safe to call from several threads at once.
class LAMINA_MODEL_API Tokenizer {
 public:
  // Throws TokenizerError naming the offending key.
  static Tokenizer from_gguf(const gguf::GgufFile& file);

  // add_special: add BOS/EOS (or CLS/SEP) as the vocabulary's add_* flags ask.
  // parse_special: text equal to a control token's text becomes that token. User-defined
  // tokens are always matched in the text, as the reference tokenizers do.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes a token stands for ('▁' becomes ' ', <0xNN> becomes the byte, byte-level
  // BPE characters become their bytes). A piece may be an incomplete UTF-8 sequence.
  // Throws std::out_of_range for an id outside the vocabulary.
  std::string token_to_piece(int32_t id, bool render_special = true) const;
  std::string decode(std::span<const int32_t> ids, const DecodeOptions& options = {}) const;

  TokenizerKind kind() const;
  const std::string& model_name() const;     // tokenizer.ggml.model
  const std::string& pre_tokenizer() const;  // tokenizer.ggml.pre, "default" when absent
  int32_t n_vocab() const;
  // Whether encoding and decoding run a tokenizer.huggingface.json pipeline.
  bool has_hf_pipeline() const;
  std::string_view token_text(int32_t id) const;  // as stored in the vocabulary
  float token_score(int32_t id) const;
  TokenType token_type(int32_t id) const;
  int32_t find_token(std::string_view text) const;  // kNoToken when absent

  int32_t bos_id() const;
  int32_t eos_id() const;
  int32_t eot_id() const;
  int32_t eom_id() const;
  int32_t unk_id() const;
  int32_t sep_id() const;
  int32_t pad_id() const;
  int32_t cls_id() const;
  int32_t mask_id() const;
  bool add_bos() const;
  bool add_eos() const;
  bool add_space_prefix() const;
  // The SentencePiece dummy prefix goes only at the very start of the text, and not when
  // the text already starts with a space; decoding then drops only the first leading
  // space of the whole text (Hugging Face's Metaspace prepend_scheme "first", from the
  // tokenizer.lamina.prepend_scheme key). Otherwise, as llama.cpp does, the prefix goes
  // before every text run that starts the text or follows a special token.
  bool space_prefix_at_start_only() const;
  // End of generation: EOS, EOT, EOM and the well-known end-of-turn tokens of the vocabulary.
  bool is_eog(int32_t id) const;
  // Control, unknown and user-defined tokens: those the encoder treats as whole units.
  bool is_special(int32_t id) const;

 private:
  struct LAMINA_MODEL_LOCAL Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// Turns a stream of token ids into text, emitting only complete UTF-8 sequences: a
// character whose bytes are split over several tokens comes out once its last byte
// arrives. Bytes that can never form a valid sequence are passed through unchanged.
// The concatenation of all push() results and finish() equals Tokenizer::decode of the
// same ids with the same options; after prime(context), it equals the decode of the
// context followed by the ids, less the decode of the context.
class LAMINA_MODEL_API StreamingDecoder {
 public:
  explicit StreamingDecoder(Tokenizer tokenizer, DecodeOptions options = {});

  // The tokens the stream continues (a prompt): they shape the text of the tokens that
  // follow (a leading space, a split character) but are never returned themselves.
  void prime(std::span<const int32_t> context);
  std::string push(int32_t id);
  // Returns whatever is held back (an unfinished sequence at the end of the stream).
  std::string finish();
  // Starts a new text.
  void reset();

 private:
  // Decodes ids_[prefix_, read_) and ids_[prefix_, end): the text already returned
  // ends where the first does.
  std::string decode_from(std::size_t begin, std::size_t end) const;

  Tokenizer tokenizer_;
  DecodeOptions options_;
  std::vector<int32_t> ids_;
  std::size_t prefix_ = 0;  // first id of the decoding window
  std::size_t read_ = 0;    // ids before this have been returned
  std::string prefix_text_;  // decode of ids_[prefix_, read_)
};

}  // namespace lamina::model

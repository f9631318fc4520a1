// Internal: the three tokenization algorithms. Each appends the ids of one run of plain
// text (special tokens are split off before) to `out`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/bpe_merge.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/text_index.h"
#include "tokenizer/vocabulary.h"

namespace lamina::gguf {
class GgufFile;
}

namespace lamina::model::detail {

// SentencePiece BPE: starting from single characters, repeatedly merge the adjacent pair
// whose concatenation is the highest-scoring token (the leftmost pair on a tie). Pieces
// that are not tokens fall back to byte tokens. `text` has its spaces already as '▁'.
void encode_sentencepiece(const Vocabulary& vocab, std::string_view text,
                          std::vector<int32_t>& out);

// WordPiece as BERT: lower-case, strip accents, split on whitespace, punctuation and CJK
// characters, then take the longest matching token repeatedly within each word.
void encode_wordpiece(const Vocabulary& vocab, std::string_view text, std::vector<int32_t>& out);

// Byte-level BPE: regex pre-tokenizer, bytes mapped to printable characters, then merges
// applied by rank (the leftmost pair on a tie).
class BpeModel {
 public:
  // Reads tokenizer.ggml.merges and the pre-tokenizer named by tokenizer.ggml.pre.
  BpeModel(const gguf::GgufFile& file, const Vocabulary& vocab);

  void encode(const Vocabulary& vocab, std::string_view text, std::vector<int32_t>& out) const;

 private:
  // Piece ids: token ids for strings in the vocabulary, ids from n_vocab on for the
  // merge strings that are not tokens.
  int32_t piece_id(const Vocabulary& vocab, std::string_view text) const;
  int32_t intern(const Vocabulary& vocab, std::string_view text);
  void encode_word(const Vocabulary& vocab, std::string_view word, std::vector<int32_t>& out) const;

  PreTokenizer pre_tokenizer_;
  bool ignore_merges_ = false;
  bool nfc_ = false;
  StringTable extra_pieces_;
  TextIndex extra_index_;
  BpeMerges merges_;
};

}  // namespace lamina::model::detail

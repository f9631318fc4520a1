#include <algorithm>

#include "lamina/gguf/file.h"
#include "tokenizer/bpe_merge.h"
#include "tokenizer/encoders.h"
#include "tokenizer/metadata.h"
#include "tokenizer/unicode.h"
#include "utf8.h"

namespace lamina::model::detail {

namespace {

constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";

const PreTokenizerRules& rules_for(const Vocabulary& vocab) {
  const PreTokenizerRules* rules = find_pre_tokenizer_rules(vocab.pre_name);
  if (rules == nullptr) {
    throw TokenizerError("tokenizer.ggml.pre: unknown pre-tokenizer '" + vocab.pre_name + "'");
  }
  return *rules;
}

}  // namespace

BpeModel::BpeModel(const gguf::GgufFile& file, const Vocabulary& vocab)
    : pre_tokenizer_(rules_for(vocab)), ignore_merges_(rules_for(vocab).ignore_merges), nfc_(rules_for(vocab).nfc) {
  const StringTable merges = required_string_table(file, kMergesKey);
  extra_index_.build(extra_pieces_);
  merges_.reserve(merges.size());
  std::string joined;
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string_view line = merges[rank];
    // The separator is the first space after the first byte (a part is never empty).
    const std::size_t space = line.size() > 1 ? line.find(' ', 1) : std::string::npos;
    if (space == std::string::npos || space + 1 >= line.size()) {
      throw TokenizerError(std::string(kMergesKey) + "[" + std::to_string(rank) +
                           "]: expected two parts separated by a space, got '" + std::string(line) + "'");
    }
    const int32_t left = intern(vocab, line.substr(0, space));
    const int32_t right = intern(vocab, line.substr(space + 1));
    joined.assign(line.substr(0, space)).append(line.substr(space + 1));
    const int32_t result = intern(vocab, joined);
    // A repeated pair keeps its first (best) rank.
    merges_.try_emplace(bpe_pair_key(left, right), BpeMerge{static_cast<int32_t>(rank), result});
  }
}

int32_t BpeModel::piece_id(const Vocabulary& vocab, std::string_view text) const {
  const int32_t id = vocab.find(text);
  if (id >= 0) return id;
  const int32_t extra = extra_index_.find(text, extra_pieces_);
  return extra >= 0 ? vocab.size() + extra : -1;
}

int32_t BpeModel::intern(const Vocabulary& vocab, std::string_view text) {
  const int32_t id = piece_id(vocab, text);
  if (id >= 0) return id;
  extra_pieces_.push_back(text);
  const auto extra = static_cast<int32_t>(extra_pieces_.size() - 1);
  extra_index_.insert(extra, extra_pieces_);
  return vocab.size() + extra;
}

void BpeModel::encode(const Vocabulary& vocab, std::string_view text,
                      std::vector<int32_t>& out) const {
  const std::string clean = nfc_ ? normalize_unicode(sanitize_utf8(text), NormalForm::NFC) : sanitize_utf8(text);
  std::vector<ByteRange> words;
  pre_tokenizer_.split(clean, words);
  std::string encoded;
  for (const ByteRange& w : words) {
    encoded.clear();
    for (std::size_t i = w.begin; i < w.end; ++i) {
      encoded += byte_to_unicode(static_cast<uint8_t>(clean[i]));
    }
    encode_word(vocab, encoded, out);
  }
}

void BpeModel::encode_word(const Vocabulary& vocab, std::string_view word,
                           std::vector<int32_t>& out) const {
  if (take_whole_word(word.size(), ignore_merges_, ignore_merges_ ? vocab.find(word) : -1, out)) return;

  std::vector<BpeSymbol> symbols;
  for (std::size_t pos = 0; pos < word.size();) {
    const std::size_t n =
        std::min(utf8::length_from_lead(static_cast<unsigned char>(word[pos])), word.size() - pos);
    push_symbol(symbols, piece_id(vocab, word.substr(pos, n)), static_cast<uint32_t>(pos), static_cast<uint32_t>(n));
    pos += n;
  }
  merge_symbols(symbols, merges_);

  for (int32_t i = 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next) {
    const BpeSymbol& s = symbols[static_cast<std::size_t>(i)];
    if (s.id >= 0 && s.id < vocab.size()) {
      out.push_back(s.id);
      continue;
    }
    // Not a token: emit the tokens of its single bytes where there are any.
    for (uint32_t j = 0; j < s.length; ++j) {
      const int32_t id = vocab.find(word.substr(s.begin + j, 1));
      if (id >= 0) out.push_back(id);
    }
  }
}

}  // namespace lamina::model::detail

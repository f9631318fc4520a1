#include "bpe_vocab.h"

#include <stdexcept>
#include <string_view>
#include <unordered_set>

#include "random_normal.h"

namespace lamina::synth {
namespace {

bool printable_as_itself(uint8_t b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// Letters drawn by their rough frequency in English text, so the pieces look
// a little like word parts.
constexpr std::string_view kLetterPool =
    "eeeeeeeeeeeetttttttttaaaaaaaaoooooooiiiiiiinnnnnnnsssssshhhhhhrrrrrrddddllllcccuuummmwwff"
    "ggyyppbbvkjxqz";

constexpr std::size_t kMaxPieceLetters = 10;

class PieceMaker {
 public:
  PieceMaker(BpeVocab& vocab, uint64_t seed)
      : vocab_(vocab), rng_(seed), space_(byte_level_char(' ')) {
    for (std::size_t i = 0; i < vocab_.tokens.size(); ++i) {
      known_.insert(vocab_.tokens[i]);
      if (i >= 256) remember(vocab_.tokens[i]);
    }
  }

  // Adds one merged token; returns false when the draw gave a known piece.
  bool try_add() {
    // Left: a word start ("Ġ"), a letter, or a piece made so far (earlier
    // pieces, shorter and more common, more likely). Right: a letter or a
    // piece that continues a word.
    const uint64_t draw = rng_.next_u64() % 4;
    std::string left = draw == 0 || (draw == 1 && pieces_.empty()) ? space_
                       : draw == 1                                 ? pick_piece()
                       : draw == 2                                 ? std::string(1, letter())
                       : pieces_.empty()                           ? space_
                                                                   : pick_piece();
    std::string right = continuations_.empty() || rng_.next_u64() % 2 == 0
                            ? std::string(1, letter())
                            : pick_continuation();
    if (letters(left) + letters(right) > kMaxPieceLetters) return false;
    std::string merged = left + right;
    if (!known_.insert(merged).second) return false;
    vocab_.merges.push_back(left + " " + right);
    vocab_.tokens.push_back(merged);
    vocab_.token_types.push_back(1);
    remember(merged);
    return true;
  }

 private:
  void remember(const std::string& piece) {
    pieces_.push_back(piece);
    if (!piece.starts_with(space_)) continuations_.push_back(piece);
  }
  char letter() { return kLetterPool[rng_.next_u64() % kLetterPool.size()]; }
  // Biased to the front: the minimum of two uniform draws.
  std::size_t early_index(std::size_t n) {
    const std::size_t a = rng_.next_u64() % n, b = rng_.next_u64() % n;
    return a < b ? a : b;
  }
  std::string pick_piece() { return pieces_[early_index(pieces_.size())]; }
  std::string pick_continuation() { return continuations_[early_index(continuations_.size())]; }
  std::size_t letters(const std::string& s) const {
    return s.starts_with(space_) ? s.size() - space_.size() + 1 : s.size();
  }

  BpeVocab& vocab_;
  SplitMix64 rng_;
  std::string space_;
  std::unordered_set<std::string> known_;
  std::vector<std::string> pieces_;
  std::vector<std::string> continuations_;
};

// Single letters glued to a word start ("Ġa") and letter pairs come first,
// as they would in a trained vocabulary.
void add_first_merges(BpeVocab& vocab, std::size_t budget) {
  const std::string space = byte_level_char(' ');
  for (char c = 'a'; c <= 'z' && vocab.merges.size() < budget; ++c) {
    vocab.merges.push_back(space + " " + c);
    vocab.tokens.push_back(space + c);
    vocab.token_types.push_back(1);
  }
}

int32_t id_of(const BpeVocab& vocab, std::string_view text) {
  if (text.empty()) return -1;
  for (std::size_t i = vocab.tokens.size(); i-- > 0;) {
    if (vocab.tokens[i] == text) return static_cast<int32_t>(i);
  }
  throw std::invalid_argument("special token " + std::string(text) + " is not in the vocabulary");
}

}  // namespace

std::string byte_level_char(uint8_t byte) {
  if (printable_as_itself(byte)) return utf8(byte);
  uint32_t n = 0;
  for (uint32_t b = 0; b < byte; ++b) {
    if (!printable_as_itself(static_cast<uint8_t>(b))) ++n;
  }
  return utf8(256 + n);
}

BpeVocab make_bpe_vocab(uint32_t n_vocab, const TokenizerStyle& style, uint64_t seed) {
  if (n_vocab < 256 + style.n_special || style.n_special < style.specials.size())
    throw std::invalid_argument("a vocabulary of " + std::to_string(n_vocab) +
                                " tokens cannot hold 256 byte tokens and " +
                                std::to_string(style.n_special) + " special tokens");
  BpeVocab vocab;
  vocab.tokens.reserve(n_vocab);
  for (int b = 0; b < 256; ++b) {
    vocab.tokens.push_back(byte_level_char(static_cast<uint8_t>(b)));
    vocab.token_types.push_back(1);
  }
  const std::size_t n_normal = n_vocab - style.n_special;
  add_first_merges(vocab, n_normal - 256);
  PieceMaker maker(vocab, seed);
  while (vocab.tokens.size() < n_normal) maker.try_add();

  for (uint32_t i = 0; i < style.n_special; ++i) {
    vocab.tokens.push_back(i < style.specials.size()
                               ? std::string(style.specials[i])
                               : "<|" + std::string(style.filler_prefix) +
                                     std::to_string(style.filler_first + i - style.specials.size()) + "|>");
    vocab.token_types.push_back(3);
  }
  vocab.bos = id_of(vocab, style.bos);
  vocab.eos = id_of(vocab, style.eos);
  vocab.padding = id_of(vocab, style.padding);
  return vocab;
}

}  // namespace lamina::synth

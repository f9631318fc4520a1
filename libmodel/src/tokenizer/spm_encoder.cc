#include <algorithm>
#include <queue>

#include "tokenizer/encoders.h"
#include "tokenizer/unicode.h"
#include "utf8.h"

namespace lamina::model::detail {

namespace {

struct Symbol {
  uint32_t begin;
  uint32_t length;  // 0 once merged into its left neighbour
  int32_t prev;
  int32_t next;
};

struct Candidate {
  float score;
  int32_t left;
  int32_t right;
  uint32_t length;  // bytes of the merged text; a stale candidate no longer adds up
};

// Highest score first; among equal scores the leftmost pair, which is what decides
// vocabularies whose scores are all equal.
struct BetterFirst {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.score != b.score ? a.score < b.score : a.left > b.left;
  }
};

}  // namespace

void encode_sentencepiece(const Vocabulary& vocab, std::string_view text,
                          std::vector<int32_t>& out) {
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t n =
        std::min(utf8::length_from_lead(static_cast<unsigned char>(text[pos])), text.size() - pos);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{static_cast<uint32_t>(pos), static_cast<uint32_t>(n), index - 1,
                             pos + n == text.size() ? -1 : index + 1});
    pos += n;
  }
  if (symbols.empty()) return;

  std::priority_queue<Candidate, std::vector<Candidate>, BetterFirst> queue;
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<std::size_t>(left)];
    const Symbol& r = symbols[static_cast<std::size_t>(right)];
    const uint32_t length = l.length + r.length;
    const int32_t id = vocab.find(text.substr(l.begin, length));
    if (id < 0) return;
    queue.push(Candidate{vocab.scores[static_cast<std::size_t>(id)], left, right, length});
  };
  for (std::size_t i = 1; i < symbols.size(); ++i) {
    consider(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
  }

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = symbols[static_cast<std::size_t>(c.left)];
    Symbol& r = symbols[static_cast<std::size_t>(c.right)];
    if (l.length == 0 || r.length == 0 || l.length + r.length != c.length) continue;
    l.length += r.length;
    r.length = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<std::size_t>(r.next)].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }

  for (int32_t i = 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next) {
    const Symbol& s = symbols[static_cast<std::size_t>(i)];
    const std::string_view piece = text.substr(s.begin, s.length);
    const int32_t id = vocab.find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    // Only single characters can be left unknown (every merge made a token): spell
    // them in byte tokens, or as one unknown token when the vocabulary has no bytes.
    const bool has_bytes = std::all_of(piece.begin(), piece.end(), [&](char b) {
      return vocab.byte_tokens[static_cast<unsigned char>(b)] >= 0;
    });
    if (has_bytes) {
      for (char b : piece) out.push_back(vocab.byte_tokens[static_cast<unsigned char>(b)]);
    } else if (vocab.ids.unk >= 0) {
      out.push_back(vocab.ids.unk);
    } else {
      throw TokenizerError("text has a character that is neither a token nor spelled by byte "
                           "tokens, and the vocabulary has no unknown token");
    }
  }
}

}  // namespace lamina::model::detail

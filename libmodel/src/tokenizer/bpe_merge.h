// Internal: ranked BPE merges applied to one word's symbols, the lowest rank first and
// the leftmost pair among equal ranks, as Hugging Face's BPE model and llama.cpp's
// byte-level BPE both do.
#pragma once

#include <cstdint>
#include <queue>
#include <unordered_map>
#include <vector>

namespace lamina::model::detail {

struct BpeSymbol {
  int32_t id;       // the piece; < 0 for text that is no piece (never merged)
  uint32_t begin;   // byte offset in the word
  uint32_t length;  // bytes covered; 0 once merged into its left neighbour
  int32_t prev;
  int32_t next;
};

struct BpeMerge {
  int32_t rank;
  int32_t result;  // the piece the pair becomes
};

// Merges by the pair of piece ids they join.
using BpeMerges = std::unordered_map<uint64_t, BpeMerge>;

inline uint64_t bpe_pair_key(int32_t left, int32_t right) {
  return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
}

// With ignore_merges, a word that is itself a piece (`whole`, or < 0) is taken whole;
// true when it was, or when the word is empty.
inline bool take_whole_word(std::size_t word_bytes, bool ignore_merges, int32_t whole, std::vector<int32_t>& out) {
  if (word_bytes == 0) return true;
  if (!ignore_merges || whole < 0) return false;
  out.push_back(whole);
  return true;
}

// Appends a symbol linked after the last one.
inline void push_symbol(std::vector<BpeSymbol>& symbols, int32_t id, uint32_t begin, uint32_t length) {
  const auto index = static_cast<int32_t>(symbols.size());
  if (index > 0) symbols.back().next = index;
  symbols.push_back(BpeSymbol{id, begin, length, index - 1, -1});
}

// Merges until no adjacent pair has a merge. `find(left_id, right_id)` returns the
// pair's merge or nullptr. The survivors are the chain from symbols[0] along `next`.
template <typename Find>
void merge_symbols(std::vector<BpeSymbol>& symbols, const Find& find) {
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t result;
  };
  struct LowerRankFirst {
    bool operator()(const Candidate& a, const Candidate& b) const {
      return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, LowerRankFirst> queue;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    const BpeSymbol& l = symbols[static_cast<std::size_t>(left)];
    if (l.next < 0 || l.id < 0) return;
    const int32_t right = symbols[static_cast<std::size_t>(l.next)].id;
    if (right < 0) return;
    if (const BpeMerge* m = find(l.id, right)) queue.push(Candidate{m->rank, left, m->result});
  };
  for (std::size_t i = 0; i + 1 < symbols.size(); ++i) consider(static_cast<int32_t>(i));
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    BpeSymbol& l = symbols[static_cast<std::size_t>(c.pos)];
    if (l.length == 0 || l.next < 0) continue;
    BpeSymbol& r = symbols[static_cast<std::size_t>(l.next)];
    // Skip pairs that an earlier merge changed.
    const BpeMerge* m = l.id >= 0 && r.id >= 0 ? find(l.id, r.id) : nullptr;
    if (m == nullptr || m->result != c.result) continue;
    l.id = c.result;
    l.length += r.length;
    r.length = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<std::size_t>(r.next)].prev = c.pos;
    consider(l.prev);
    consider(c.pos);
  }
}

inline void merge_symbols(std::vector<BpeSymbol>& symbols, const BpeMerges& merges) {
  merge_symbols(symbols, [&](int32_t left, int32_t right) -> const BpeMerge* {
    const auto it = merges.find(bpe_pair_key(left, right));
    return it == merges.end() ? nullptr : &it->second;
  });
}

}  // namespace lamina::model::detail

// Internal: finding special tokens in text before the tokenization algorithm runs.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocabulary.h"

namespace lamina::model::detail {

struct Fragment {
  int32_t token = kNoToken;  // a special token, or kNoToken for the text [begin, end)
  std::size_t begin = 0;
  std::size_t end = 0;
};

class SpecialTokenSplitter {
 public:
  explicit SpecialTokenSplitter(const Vocabulary& vocab);

  // Cuts text into runs of plain text and special tokens. User-defined tokens are always
  // recognised, control and unknown tokens only with parse_special. Longer tokens win
  // (then lower ids); for one token the leftmost occurrences win, as if each token in
  // that order cut the text still left.
  std::vector<Fragment> split(const Vocabulary& vocab, std::string_view text,
                              bool parse_special) const;

 private:
  struct Edge {
    unsigned char byte;
    int32_t child;
  };

  int32_t child(int32_t node, unsigned char byte) const;

  // A trie of the special tokens' texts: node 0 is the root, the edges of node n are
  // edges_[first_edge_[n] .. first_edge_[n + 1]) sorted by byte. Each token has a rank
  // in the order tokens claim text: longer first, then lower id.
  std::vector<Edge> edges_;
  std::vector<uint32_t> first_edge_;
  std::vector<int32_t> node_token_;
  std::vector<int32_t> node_rank_;
  std::vector<int32_t> rank_token_;
  std::size_t n_ranks_ = 0;
  bool first_byte_[256] = {};
};

}  // namespace lamina::model::detail

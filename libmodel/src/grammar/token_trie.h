// Internal: the vocabulary's token bytes in a trie laid out in preorder, so
// that a mask is one scan that skips a whole subtree where the grammar
// refuses its first byte: tokens sharing a prefix walk that prefix once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lamina/model/grammar.h"

namespace lamina::model {

struct GrammarVocabulary::Impl {
  struct TrieNode {
    unsigned char byte;
    uint32_t depth;        // 1 for a first byte
    uint32_t skip;         // index of the first node after this subtree
    uint32_t token_begin;  // tokens whose bytes end here: token_ids[token_begin, token_end)
    uint32_t token_end;
  };

  Impl(std::vector<std::string> pieces, std::vector<bool> grammar_token, std::vector<int32_t> eog);

  int32_t n_vocab = 0;
  std::vector<std::string> pieces;  // empty for tokens that never match grammar text
  std::vector<bool> grammar_token;
  std::vector<int32_t> eog;
  std::vector<TrieNode> nodes;
  std::vector<int32_t> token_ids;
  uint32_t max_depth = 0;
};

}  // namespace lamina::model

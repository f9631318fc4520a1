// Internal: tokenizer.json's added_tokens, found in the text before the model runs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/hf/pipeline.h"

namespace lamina::model::detail::hf {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool single_word = false;  // only where no word character touches it
  bool lstrip = false;       // takes the whitespace before it
  bool rstrip = false;       // takes the whitespace after it
  bool normalized = false;   // found in the normalized text rather than the raw one
};

// A stretch of text, or an added token.
struct Segment {
  int32_t token = -1;
  std::size_t begin = 0;
  std::size_t end = 0;
};

class AddedVocabulary {
 public:
  explicit AddedVocabulary(std::vector<AddedToken> tokens);

  // Cuts `text` at the tokens whose `normalized` flag equals `normalized`, leftmost
  // first and the longest at one place; special tokens only with `match_special`.
  // Appends segments covering the whole text (none for an empty one).
  void split(std::string_view text, bool normalized, bool match_special, std::vector<Segment>& out) const;

  const AddedToken* find(int32_t id) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // A byte trie of the tokens' contents; node 0 is the root.
  int32_t child(int32_t node, unsigned char byte) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, std::size_t> by_id_;
  std::unordered_map<uint64_t, int32_t> children_;  // (node << 8 | byte) -> node
  std::vector<int32_t> node_token_;                 // index into tokens_, or -1
};

}  // namespace lamina::model::detail::hf

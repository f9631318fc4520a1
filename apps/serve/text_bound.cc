#include "text_bound.h"

#include <algorithm>

namespace lamina::serve {

std::size_t max_text_bytes(const model::Tokenizer& tokenizer, std::size_t n_tokens) {
  constexpr std::size_t kNormalizationShrink = 3;
  std::size_t longest = 1;
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id)
    longest = std::max({longest, tokenizer.token_text(id).size(), tokenizer.token_to_piece(id).size()});
  return n_tokens * longest * kNormalizationShrink;
}

}  // namespace lamina::serve

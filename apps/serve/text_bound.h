// The size bound on prompt text that spares tokenizing what cannot fit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lamina/model/tokenizer.h"

namespace lamina::serve {

// The most bytes a text of `n_tokens` tokens can have, so that a longer text
// is known to exceed them without being tokenized: no token stands for more
// bytes than the vocabulary's longest, and NFC normalization shrinks text to
// a third at most (Hangul jamo).
std::size_t max_text_bytes(const model::Tokenizer& tokenizer, std::size_t n_tokens);

}  // namespace lamina::serve

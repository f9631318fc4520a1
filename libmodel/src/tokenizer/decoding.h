// Internal: one step of decoding a GGUF vocabulary's tokens (tokenizer.ggml.*), as
// Tokenizer::decode runs it token by token.
#pragma once

#include <cstdint>
#include <string>

#include "lamina/model/tokenizer.h"

namespace lamina::model::detail {

// Appends the text of `id` to `out`. `after_special` is true at the start of a text and
// after a special token; it is updated for the next token.
void append_token_text(const Tokenizer& tokenizer, int32_t id, const DecodeOptions& options,
                       bool& after_special, std::string& out);

}  // namespace lamina::model::detail

// The text of generated tokens, shared by the generation loop and the serving engine:
// decoded as Hugging Face decodes the prompt and the generation together, less the
// prompt's text (so the first token's leading space is kept or dropped as it would
// be there), streamed in complete UTF-8 characters, and cut before a stop string.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lamina/model/tokenizer.h"
#include "stop_filter.h"

namespace lamina::model {

class GeneratedText {
 public:
  GeneratedText(const Tokenizer& tokenizer, std::span<const int32_t> prompt, bool skip_special_tokens,
                std::vector<std::string> stops)
      : decoder_(tokenizer, {.render_special = !skip_special_tokens}),
        filter_(std::move(stops)),
        n_vocab_(tokenizer.n_vocab()) {
    decoder_.prime(prompt);
  }

  // Appends the text `id` completes; true when a stop string completed (the text is
  // then cut before it). Ids past the tokenizer's vocabulary (padded output rows)
  // have no text.
  bool append(int32_t id, std::string& text) {
    return id >= 0 && id < n_vocab_ && filter_.append(decoder_.push(id), text);
  }
  // At the end of the generation: appends what is held back (a character whose last
  // byte never came); true when that completes a stop string.
  bool finish(std::string& text) { return filter_.append(decoder_.finish(), text); }

  std::size_t safe_length(std::string_view text) const { return filter_.safe_length(text); }

 private:
  StreamingDecoder decoder_;
  StopFilter filter_;
  int32_t n_vocab_;
};

}  // namespace lamina::model

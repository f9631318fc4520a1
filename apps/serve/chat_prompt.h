// Chat messages to prompt tokens, with the model's chat template.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lamina/model/chat.h"
#include "lamina/model/chat_template.h"
#include "lamina/model/model.h"

namespace lamina::serve {

class ChatPrompter {
 public:
  // `family` names a built-in format (chatml, llama3, ...) to use instead of
  // the model's template; empty: the model's own Jinja template, ChatML when
  // it has none (or one that cannot be rendered at all).
  // Throws std::runtime_error for an unknown family name.
  ChatPrompter(const model::Model& model, std::string_view family);

  // The prompt text. Throws std::invalid_argument when the template refuses
  // the conversation (e.g. turns that do not alternate) or fails on it.
  // `options`: add_generation_prompt, tools and template keyword arguments (a
  // built-in format follows add_generation_prompt and enable_thinking only).
  std::string render(const std::vector<model::ChatMessage>& messages,
                     const model::ChatRenderOptions& options = {}) const;
  // The tokens of a rendered prompt (BOS added where the template omits it).
  std::vector<int32_t> encode(const std::string& prompt) const;

  // Which format is used and why, for the startup log.
  const std::string& description() const { return description_; }

 private:
  const model::Model& model_;
  std::optional<model::ModelChat> model_chat_;  // the model's template
  model::ChatFormat builtin_;                   // otherwise
  std::string bos_;
  std::string eos_;
  std::string description_;
};

// The most bytes a text of `n_tokens` tokens can have, so that a longer text
// is known to exceed them without being tokenized: no token stands for more
// bytes than the vocabulary's longest, and NFC normalization shrinks text to
// a third at most (Hangul jamo).
std::size_t max_text_bytes(const model::Tokenizer& tokenizer, std::size_t n_tokens);

}  // namespace lamina::serve

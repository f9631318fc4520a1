// Chat messages to prompt tokens, with one policy for every program: the
// model's own chat template; ChatML when the model has none, or has one that
// cannot be rendered at all (description() says which and why); a built-in
// family chosen by name replaces the model's template.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lamina/model/chat.h"
#include "lamina/model/chat_template.h"
#include "lamina/model/export.h"

namespace lamina::model {

class Model;

class LAMINA_MODEL_API ChatPrompt {
 public:
  // `family` names a built-in format (chatml, llama2, llama3, mistral, phi3,
  // gemma) to use instead of the model's template; empty: the policy above.
  // Throws std::invalid_argument for an unknown family name. Keeps copies of
  // what it needs of the model's tokenizer, which must outlive it.
  explicit ChatPrompt(const Model& model, std::string_view family = {});

  // The prompt text. Throws std::invalid_argument when the template refuses
  // the conversation (e.g. turns that do not alternate) or fails on it.
  // `options`: add_generation_prompt, tools and template keyword arguments (a
  // built-in format follows add_generation_prompt and enable_thinking only).
  std::string render(const std::vector<ChatMessage>& messages, const ChatRenderOptions& options = {}) const;
  // The tokens of a rendered prompt (BOS added where the template omits it).
  std::vector<int32_t> encode(const std::string& prompt) const;
  // render() then encode().
  std::vector<int32_t> prompt_ids(const std::vector<ChatMessage>& messages,
                                  const ChatRenderOptions& options = {}) const;

  // Which format is used and why, e.g. "the model's Jinja template" or
  // "chatml (the model has no chat template)".
  const std::string& description() const;
  // False when a built-in format stands in for the model's own template
  // because it has none or it cannot be rendered.
  bool follows_model() const;

 private:
  struct LAMINA_MODEL_LOCAL State;
  std::shared_ptr<const State> state_;
};

}  // namespace lamina::model

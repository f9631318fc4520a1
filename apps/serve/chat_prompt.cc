#include "chat_prompt.h"

#include <algorithm>
#include <stdexcept>

namespace lamina::serve {
namespace {

std::string special_text(const model::Tokenizer& tok, int32_t id) {
  return id >= 0 ? tok.token_to_piece(id) : std::string();
}

}  // namespace

ChatPrompter::ChatPrompter(const model::Model& model, std::string_view family)
    : model_(model),
      builtin_{model::ChatFamily::ChatMl, {}},
      bos_(special_text(model.tokenizer(), model.tokenizer().bos_id())),
      eos_(special_text(model.tokenizer(), model.tokenizer().eos_id())) {
  if (!family.empty()) {
    const auto named = model::chat_format_by_name(family);
    if (!named) throw std::runtime_error("--chat-template: unknown family '" + std::string(family) + "'");
    builtin_ = *named;
    description_ = std::string(model::chat_family_name(builtin_.family)) + " (--chat-template)";
    return;
  }
  model_chat_.emplace(model);
  if (!model_chat_->has_template()) {
    model_chat_.reset();
    description_ = "chatml (the model has no chat template)";
    return;
  }
  description_ = model_chat_->uses_jinja() ? "the model's Jinja template"
                                           : "a built-in format matching the model's template";
  // A template that cannot be rendered at all would fail every request; one
  // that objects to this conversation (raise_exception) may accept others.
  try {
    model_chat_->render({{"user", "Hello"}});
  } catch (const model::ChatTemplateError& e) {
    using Kind = model::ChatTemplateError::Kind;
    if (e.kind() == Kind::Raised || e.kind() == Kind::Render) return;
    model_chat_.reset();
    description_ = std::string("chatml (the model's template fails: ") + e.what() + ")";
  }
}

std::string ChatPrompter::render(const std::vector<model::ChatMessage>& messages,
                                 const model::ChatRenderOptions& options) const {
  if (!model_chat_) {
    bool enable_thinking = true;
    for (const auto& [name, value] : options.flags) {
      if (name == "enable_thinking") enable_thinking = value;
    }
    return model::render_chat(builtin_, messages, options.add_generation_prompt, bos_, eos_, enable_thinking);
  }
  try {
    return model_chat_->render(messages, options);
  } catch (const model::ChatTemplateError& e) {
    throw std::invalid_argument(e.what());
  }
}

std::vector<int32_t> ChatPrompter::encode(const std::string& prompt) const {
  const model::Tokenizer& tok = model_.tokenizer();
  std::vector<int32_t> ids = tok.encode(prompt, /*add_special=*/false, /*parse_special=*/true);
  // Templates that do not write the BOS text still expect the token.
  if (tok.add_bos() && tok.bos_id() >= 0 && (ids.empty() || ids.front() != tok.bos_id()))
    ids.insert(ids.begin(), tok.bos_id());
  return ids;
}

std::size_t max_text_bytes(const model::Tokenizer& tokenizer, std::size_t n_tokens) {
  constexpr std::size_t kNormalizationShrink = 3;
  std::size_t longest = 1;
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id)
    longest = std::max({longest, tokenizer.token_text(id).size(), tokenizer.token_to_piece(id).size()});
  return n_tokens * longest * kNormalizationShrink;
}

}  // namespace lamina::serve

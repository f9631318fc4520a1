#include "lamina/model/chat_prompt.h"

#include <optional>
#include <stdexcept>

#include "lamina/model/model.h"

namespace lamina::model {
namespace {

std::string special_text(const Tokenizer& tok, int32_t id) { return id >= 0 ? tok.token_to_piece(id) : std::string(); }

}  // namespace

struct ChatPrompt::State {
  const Tokenizer* tokenizer = nullptr;
  std::optional<ModelChat> model_chat;  // the model's template
  ChatFormat builtin{ChatFamily::ChatMl, {}};  // otherwise
  std::string bos, eos;
  std::string description;
  bool follows_model = true;
};

ChatPrompt::ChatPrompt(const Model& model, std::string_view family) {
  auto s = std::make_shared<State>();
  const Tokenizer& tok = model.tokenizer();
  s->tokenizer = &tok;
  s->bos = special_text(tok, tok.bos_id());
  s->eos = special_text(tok, tok.eos_id());
  state_ = s;
  if (!family.empty()) {
    const auto named = chat_format_by_name(family);
    if (!named)
      throw std::invalid_argument("unknown chat family '" + std::string(family) +
                                  "' (chatml, llama2, llama3, mistral, phi3, gemma)");
    s->builtin = *named;
    s->description = std::string(chat_family_name(named->family)) + " (chosen by name)";
    return;
  }
  s->model_chat.emplace(model);
  if (!s->model_chat->has_template()) {
    s->model_chat.reset();
    s->follows_model = false;
    s->description = "chatml (the model has no chat template)";
    return;
  }
  s->description = s->model_chat->uses_jinja() ? "the model's Jinja template"
                                               : "a built-in format matching the model's template";
  // A template that cannot be rendered at all would fail every conversation;
  // one that objects to this one (raise_exception) may accept others.
  try {
    s->model_chat->render({{"user", "Hello"}});
  } catch (const ChatTemplateError& e) {
    using Kind = ChatTemplateError::Kind;
    if (e.kind() == Kind::Raised || e.kind() == Kind::Render) return;
    s->model_chat.reset();
    s->follows_model = false;
    s->description = std::string("chatml (the model's template fails: ") + e.what() + ")";
  }
}

std::string ChatPrompt::render(const std::vector<ChatMessage>& messages, const ChatRenderOptions& options) const {
  const State& s = *state_;
  if (!s.model_chat) {
    bool enable_thinking = true;
    for (const auto& [name, value] : options.flags) {
      if (name == "enable_thinking") enable_thinking = value;
    }
    return render_chat(s.builtin, messages, options.add_generation_prompt, s.bos, s.eos, enable_thinking);
  }
  try {
    return s.model_chat->render(messages, options);
  } catch (const ChatTemplateError& e) {
    throw std::invalid_argument(e.what());
  }
}

std::vector<int32_t> ChatPrompt::encode(const std::string& prompt) const {
  const Tokenizer& tok = *state_->tokenizer;
  std::vector<int32_t> ids = tok.encode(prompt, /*add_special=*/false, /*parse_special=*/true);
  // Templates that do not write the BOS text still expect the token.
  if (tok.add_bos() && tok.bos_id() >= 0 && (ids.empty() || ids.front() != tok.bos_id()))
    ids.insert(ids.begin(), tok.bos_id());
  return ids;
}

std::vector<int32_t> ChatPrompt::prompt_ids(const std::vector<ChatMessage>& messages,
                                            const ChatRenderOptions& options) const {
  return encode(render(messages, options));
}

const std::string& ChatPrompt::description() const { return state_->description; }

bool ChatPrompt::follows_model() const { return state_->follows_model; }

}  // namespace lamina::model

#include "lamina/model/chat_template.h"

#include <algorithm>

#include "jinja/parser.h"
#include "jinja/renderer.h"
#include "lamina/gguf/file.h"
#include "lamina/model/model.h"

namespace lamina::model {
namespace {

jinja::Value message_value(const ChatMessage& m) {
  return jinja::Value::dict({{"role", jinja::Value::string(m.role)}, {"content", jinja::Value::string(m.content)}});
}

std::optional<std::string_view> template_of(const Model& model) {
  const auto* v = model.file().find("tokenizer.chat_template");
  if (!v || v->type() != gguf::ValueType::String) return std::nullopt;
  return std::string_view(v->as_string());
}

std::string token_text(const Tokenizer& tok, int32_t id) { return id >= 0 ? std::string(tok.token_text(id)) : std::string(); }

bool flag_value(const std::vector<std::pair<std::string, bool>>& flags, std::string_view name, bool fallback) {
  for (const auto& [k, v] : flags)
    if (k == name) return v;
  return fallback;
}

}  // namespace

struct ChatTemplate::Parsed {
  jinja::StmtList body;
};

ChatTemplate::ChatTemplate(std::string_view source) {
  auto parsed = std::make_shared<Parsed>();
  parsed->body = jinja::parse_template(source);
  parsed_ = std::move(parsed);
}

std::string ChatTemplate::render(const ChatTemplateInputs& inputs) const {
  jinja::Variables vars;
  try {
    std::vector<jinja::Value> messages;
    messages.reserve(inputs.messages.size());
    for (const ChatMessage& m : inputs.messages) messages.push_back(message_value(m));
    // What transformers passes: the special tokens, tools and documents (None
    // when not given), then the caller's keyword arguments.
    vars.emplace_back("messages", jinja::Value::list(std::move(messages)));
    vars.emplace_back("add_generation_prompt", jinja::Value::boolean(inputs.add_generation_prompt));
    vars.emplace_back("bos_token", jinja::Value::string(inputs.bos_token));
    vars.emplace_back("eos_token", jinja::Value::string(inputs.eos_token));
    vars.emplace_back("tools", jinja::Value::none());
    vars.emplace_back("documents", jinja::Value::none());
  } catch (const jinja::Error& e) {
    throw ChatTemplateError(ChatTemplateError::Kind::Render, e.what());
  }
  for (const auto& flag : inputs.flags) {
    auto it = std::find_if(vars.begin(), vars.end(), [&](const auto& v) { return v.first == flag.first; });
    if (it != vars.end()) {
      it->second = jinja::Value::boolean(flag.second);
    } else {
      vars.emplace_back(flag.first, jinja::Value::boolean(flag.second));
    }
  }

  return jinja::render(parsed_->body, vars);
}

ModelChat::ModelChat(const Model& model)
    : ModelChat(template_of(model), token_text(model.tokenizer(), model.tokenizer().bos_id()),
                token_text(model.tokenizer(), model.tokenizer().eos_id())) {}

ModelChat::ModelChat(std::optional<std::string_view> chat_template, std::string bos_token, std::string eos_token)
    : has_template_(chat_template.has_value()), bos_(std::move(bos_token)), eos_(std::move(eos_token)) {
  if (!chat_template) return;
  fallback_ = detect_chat_format(*chat_template);
  try {
    jinja_.emplace(*chat_template);
  } catch (const ChatTemplateError& e) {
    parse_error_ = e.what();
  }
}

std::string ModelChat::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                              const std::vector<std::pair<std::string, bool>>& flags) const {
  if (!has_template_)
    throw ChatTemplateError(ChatTemplateError::Kind::NoTemplate,
                            "the model has no chat template (tokenizer.chat_template)");
  if (jinja_) {
    try {
      return jinja_->render({messages, add_generation_prompt, bos_, eos_, flags});
    } catch (const ChatTemplateError& e) {
      if (e.kind() != ChatTemplateError::Kind::Unsupported || !fallback_) throw;
    }
  } else if (!fallback_) {
    throw ChatTemplateError(ChatTemplateError::Kind::Syntax,
                            parse_error_ + " (and the template is none of the built-in chat formats)");
  }
  try {
    return render_chat(*fallback_, messages, add_generation_prompt, bos_, eos_,
                       flag_value(flags, "enable_thinking", true));
  } catch (const std::invalid_argument& e) {
    throw ChatTemplateError(ChatTemplateError::Kind::Raised, e.what());
  }
}

}  // namespace lamina::model

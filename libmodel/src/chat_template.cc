#include "lamina/model/chat_template.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "jinja/parser.h"
#include "jinja/renderer.h"
#include "lamina/gguf/file.h"
#include "lamina/model/model.h"

namespace lamina::model {
namespace {

// JSON keeps its key order, as the Python dicts transformers passes do.
using OrderedJson = nlohmann::ordered_json;

jinja::Value json_value(const OrderedJson& j) {
  switch (j.type()) {
    case OrderedJson::value_t::null: return jinja::Value::none();
    case OrderedJson::value_t::boolean: return jinja::Value::boolean(j.get<bool>());
    case OrderedJson::value_t::number_integer: return jinja::Value::integer(j.get<int64_t>());
    case OrderedJson::value_t::number_unsigned:
      if (j.get<uint64_t>() <= uint64_t{INT64_MAX}) return jinja::Value::integer(static_cast<int64_t>(j.get<uint64_t>()));
      return jinja::Value::number(j.get<double>());
    case OrderedJson::value_t::number_float: return jinja::Value::number(j.get<double>());
    case OrderedJson::value_t::string: return jinja::Value::string(j.get<std::string>());
    case OrderedJson::value_t::array: {
      std::vector<jinja::Value> items;
      for (const OrderedJson& item : j) items.push_back(json_value(item));
      return jinja::Value::list(std::move(items));
    }
    case OrderedJson::value_t::object: {
      std::vector<std::pair<std::string, jinja::Value>> entries;
      for (auto it = j.begin(); it != j.end(); ++it) entries.emplace_back(it.key(), json_value(it.value()));
      return jinja::Value::dict(std::move(entries));
    }
    default: return jinja::Value::none();
  }
}

OrderedJson parse_json(const std::string& text, const char* what, OrderedJson::value_t type) {
  OrderedJson j;
  try {
    j = OrderedJson::parse(text);
  } catch (const OrderedJson::exception& e) {
    throw ChatTemplateError(ChatTemplateError::Kind::Render, std::string(what) + " is not JSON: " + e.what());
  }
  if (j.type() != type)
    throw ChatTemplateError(ChatTemplateError::Kind::Render,
                            std::string(what) + (type == OrderedJson::value_t::array ? " is not a JSON array" : " is not a JSON object"));
  return j;
}

jinja::Value message_value(const ChatMessage& m) {
  std::vector<std::pair<std::string, jinja::Value>> fields = {{"role", jinja::Value::string(m.role)},
                                                               {"content", jinja::Value::string(m.content)}};
  if (!m.extra_json.empty()) {
    const OrderedJson extra = parse_json(m.extra_json, "a message's fields", OrderedJson::value_t::object);
    for (auto it = extra.begin(); it != extra.end(); ++it) {
      auto field = std::find_if(fields.begin(), fields.end(), [&](const auto& f) { return f.first == it.key(); });
      if (field != fields.end()) {
        field->second = json_value(it.value());
      } else {
        fields.emplace_back(it.key(), json_value(it.value()));
      }
    }
  }
  return jinja::Value::dict(std::move(fields));
}

// Sets `name` to `value`, replacing an earlier one.
void set_variable(jinja::Variables& vars, const std::string& name, jinja::Value value) {
  auto it = std::find_if(vars.begin(), vars.end(), [&](const auto& v) { return v.first == name; });
  if (it != vars.end()) {
    it->second = std::move(value);
  } else {
    vars.emplace_back(name, std::move(value));
  }
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
    vars.emplace_back("tools", inputs.tools_json.empty()
                                   ? jinja::Value::none()
                                   : json_value(parse_json(inputs.tools_json, "tools", OrderedJson::value_t::array)));
    vars.emplace_back("documents", jinja::Value::none());
    for (const auto& flag : inputs.flags) set_variable(vars, flag.first, jinja::Value::boolean(flag.second));
    if (!inputs.kwargs_json.empty()) {
      const OrderedJson kwargs = parse_json(inputs.kwargs_json, "chat_template_kwargs", OrderedJson::value_t::object);
      for (auto it = kwargs.begin(); it != kwargs.end(); ++it) set_variable(vars, it.key(), json_value(it.value()));
    }
  } catch (const jinja::Error& e) {
    throw ChatTemplateError(ChatTemplateError::Kind::Render, e.what());
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
  return render(messages, ChatRenderOptions{add_generation_prompt, flags, {}, {}});
}

std::string ModelChat::render(const std::vector<ChatMessage>& messages, const ChatRenderOptions& options) const {
  const bool add_generation_prompt = options.add_generation_prompt;
  const auto& flags = options.flags;
  const bool beyond_builtin = !options.tools_json.empty() || !options.kwargs_json.empty() ||
                              std::any_of(messages.begin(), messages.end(), [](const ChatMessage& m) { return !m.extra_json.empty(); });
  if (!has_template_)
    throw ChatTemplateError(ChatTemplateError::Kind::NoTemplate,
                            "the model has no chat template (tokenizer.chat_template)");
  if (jinja_) {
    try {
      return jinja_->render(
          {messages, add_generation_prompt, bos_, eos_, flags, options.tools_json, options.kwargs_json});
    } catch (const ChatTemplateError& e) {
      if (e.kind() != ChatTemplateError::Kind::Unsupported || !fallback_ || beyond_builtin) throw;
    }
  } else if (!fallback_ || beyond_builtin) {
    throw ChatTemplateError(ChatTemplateError::Kind::Syntax,
                            parse_error_ + (fallback_ ? " (and the built-in format that stands in knows no tools or extra fields)"
                                                      : " (and the template is none of the built-in chat formats)"));
  }
  try {
    return render_chat(*fallback_, messages, add_generation_prompt, bos_, eos_,
                       flag_value(flags, "enable_thinking", true));
  } catch (const std::invalid_argument& e) {
    throw ChatTemplateError(ChatTemplateError::Kind::Raised, e.what());
  }
}

}  // namespace lamina::model

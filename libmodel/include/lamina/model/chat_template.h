// Chat templates: the Jinja templates models ship in tokenizer.chat_template,
// rendered as Hugging Face transformers' apply_chat_template(...,
// tokenize=False) renders them (Jinja with trim_blocks and lstrip_blocks,
// loop controls, raise_exception(), strftime_now(), and transformers' |tojson).
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lamina/model/chat.h"
#include "lamina/model/export.h"

namespace lamina::model {

class Model;

class LAMINA_MODEL_API ChatTemplateError : public std::runtime_error {
 public:
  enum class Kind {
    Syntax,       // the template does not parse; the message names line:column
    Render,       // rendering failed (an undefined value, a type error); names line:column
    Unsupported,  // the template needs a Jinja feature this renderer lacks
    Raised,       // the template called raise_exception(message); what() is that message
    NoTemplate,   // the model has no chat template
  };
  ChatTemplateError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const noexcept { return kind_; }

 private:
  Kind kind_;
};

struct LAMINA_MODEL_API ChatTemplateInputs {
  std::vector<ChatMessage> messages;
  bool add_generation_prompt = true;
  std::string bos_token, eos_token;
  // Extra boolean variables, e.g. {"enable_thinking", false}.
  std::vector<std::pair<std::string, bool>> flags;
  // The tool (function) definitions as a JSON array; empty: tools is none.
  std::string tools_json = {};
  // More variables as a JSON object (an API's chat_template_kwargs); they come last
  // and replace any of the above.
  std::string kwargs_json = {};
};

// How ModelChat renders a conversation besides its messages.
struct LAMINA_MODEL_API ChatRenderOptions {
  bool add_generation_prompt = true;
  std::vector<std::pair<std::string, bool>> flags;
  std::string tools_json;   // see ChatTemplateInputs
  std::string kwargs_json;  // see ChatTemplateInputs
};

// A parsed template. Copies share the parsed form; render() is safe to call
// from several threads at once. A hostile template cannot exhaust the
// machine: nesting, recursion, the work of one render and the size of what it
// builds are capped (at sizes no real template comes near), and exceeding a
// cap is a ChatTemplateError.
class LAMINA_MODEL_API ChatTemplate {
 public:
  // Parses once; throws ChatTemplateError (Kind::Syntax).
  explicit ChatTemplate(std::string_view source);

  // The template sees `messages` (dicts with role and content, and each message's
  // extra fields), add_generation_prompt, bos_token, eos_token, tools (none
  // unless given), documents = none, each flag, then the kwargs. Throws
  // ChatTemplateError (Kind::Render for JSON that does not parse).
  std::string render(const ChatTemplateInputs& inputs) const;

 private:
  struct LAMINA_MODEL_LOCAL Parsed;
  std::shared_ptr<const Parsed> parsed_;
};

// A model's chat formatting: its own Jinja template, with the built-in family
// of lamina/model/chat.h standing in where the template cannot be parsed or
// needs a feature the renderer lacks. Keeps copies of what it needs, so it may
// outlive the model it was made from.
class LAMINA_MODEL_API ModelChat {
 public:
  // From tokenizer.chat_template and the text of the BOS and EOS tokens.
  explicit ModelChat(const Model& model);
  // From a template (nullopt: the model has none) and the special tokens' text.
  ModelChat(std::optional<std::string_view> chat_template, std::string bos_token, std::string eos_token);

  // Renders as transformers' apply_chat_template(messages, tokenize=False,
  // add_generation_prompt=..., **flags). Throws ChatTemplateError: Kind::NoTemplate
  // when there is no template, Kind::Raised when the template rejects the
  // conversation (e.g. roles that do not alternate).
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true,
                     const std::vector<std::pair<std::string, bool>>& flags = {}) const;
  // The same with tools and template keyword arguments. The built-in formats that
  // stand in for an unparsable template know no tools or extra fields: with them,
  // only the model's own template renders.
  std::string render(const std::vector<ChatMessage>& messages, const ChatRenderOptions& options) const;

  bool has_template() const { return has_template_; }
  // False when the template did not parse and a built-in family is used instead.
  bool uses_jinja() const { return jinja_.has_value(); }

 private:
  std::optional<ChatTemplate> jinja_;
  std::optional<ChatFormat> fallback_;
  bool has_template_ = false;
  std::string parse_error_;
  std::string bos_, eos_;
};

}  // namespace lamina::model

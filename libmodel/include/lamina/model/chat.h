// Chat formatting for the common template families, recognised from a
// model's tokenizer.chat_template (a full Jinja renderer is not needed for them).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lamina/model/export.h"

namespace lamina::model {

struct LAMINA_MODEL_API ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
  // The message's other fields as a JSON object (tool_calls, tool_call_id, name, a
  // content that is null or a list of parts, ...), given to a Jinja template as
  // transformers gives them; its fields replace role and content. Empty: none.
  std::string extra_json = {};
};

enum class ChatFamily { ChatMl, Llama2, Llama3, Mistral, Phi3, Gemma };

struct LAMINA_MODEL_API ChatFormat {
  ChatFamily family;
  std::string default_system;  // ChatML templates that insert one when none is given
  bool strip_thinking = false;  // drop "...</think>" from past assistant turns (Qwen3)
  bool thinking_switch = false; // honours enable_thinking = false with an empty think block
};

// The family of a Jinja chat template, or nullopt when it is none we know.
LAMINA_MODEL_API std::optional<ChatFormat> detect_chat_format(std::string_view chat_template);
// By name: chatml, llama2, llama3, mistral, phi3, gemma.
LAMINA_MODEL_API std::optional<ChatFormat> chat_format_by_name(std::string_view name);
LAMINA_MODEL_API std::string_view chat_family_name(ChatFamily family);

// Renders the conversation as the template would, with `bos`/`eos` as the
// special tokens' text. Throws std::invalid_argument when the family needs
// alternating user/assistant turns and they do not alternate.
// `enable_thinking` false opens the reply with an empty think block, where
// the template supports that (Qwen3).
LAMINA_MODEL_API std::string render_chat(const ChatFormat& format, const std::vector<ChatMessage>& messages,
                                         bool add_generation_prompt, std::string_view bos, std::string_view eos,
                                         bool enable_thinking = true);

}  // namespace lamina::model

#include "lamina/model/chat.h"

#include <stdexcept>

namespace lamina::model {
namespace {

// Appends every part; building with `+` on temporaries trips a false
// -Wrestrict in GCC 12 at -O3.
template <typename... Parts>
void append(std::string& out, const Parts&... parts) {
  (out.append(std::string_view(parts)), ...);
}

bool contains(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

std::string trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
  std::size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

// The default system prompt a ChatML template writes as a literal, if any.
std::string chatml_default_system(std::string_view tmpl) {
  constexpr std::string_view kOpen = "<|im_start|>system\\n";
  const std::size_t at = tmpl.find(kOpen);
  if (at == std::string_view::npos) return {};
  const std::size_t start = at + kOpen.size();
  const std::size_t end = tmpl.find("<|im_end|>", start);
  if (end == std::string_view::npos) return {};
  const std::string_view text = tmpl.substr(start, end - start);
  // Only a plain literal counts, not an expression such as "' + message...".
  if (contains(text, "'") || contains(text, "\"") || contains(text, "{")) return {};
  return std::string(text);
}

// Splits off a leading system message.
std::pair<std::string, std::vector<ChatMessage>> split_system(const std::vector<ChatMessage>& messages) {
  if (!messages.empty() && messages[0].role == "system")
    return {messages[0].content, std::vector<ChatMessage>(messages.begin() + 1, messages.end())};
  return {std::string(), messages};
}

void require_alternating(const std::vector<ChatMessage>& turns) {
  for (std::size_t i = 0; i < turns.size(); ++i) {
    if ((turns[i].role == "user") != (i % 2 == 0))
      throw std::invalid_argument("conversation roles must alternate user/assistant/user/...");
  }
}

std::string render_chatml(const ChatFormat& f, const std::vector<ChatMessage>& messages, bool gen, bool thinking) {
  std::string out;
  if (!f.default_system.empty() && (messages.empty() || messages[0].role != "system"))
    append(out, "<|im_start|>system\n", f.default_system, "<|im_end|>\n");
  for (const auto& m : messages) {
    std::string content = m.content;
    if (f.strip_thinking && m.role == "assistant") {
      const std::size_t at = content.rfind("</think>");
      if (at != std::string::npos) {
        content = content.substr(at + 8);
        content.erase(0, content.find_first_not_of('\n') == std::string::npos ? content.size()
                                                                                : content.find_first_not_of('\n'));
      }
    }
    append(out, "<|im_start|>", m.role, "\n", content, "<|im_end|>\n");
  }
  if (gen) out += "<|im_start|>assistant\n";
  if (gen && f.thinking_switch && !thinking) out += "<think>\n\n</think>\n\n";
  return out;
}

std::string render_llama2(const std::vector<ChatMessage>& messages, std::string_view bos, std::string_view eos) {
  const bool has_system = !messages.empty() && messages[0].role == "system";
  auto [system, turns] = split_system(messages);
  require_alternating(turns);
  std::string sys;
  if (has_system) append(sys, "<<SYS>>\n", trim(system), "\n<</SYS>>\n\n");
  std::string out;
  for (std::size_t i = 0; i < turns.size(); ++i) {
    std::string content = i == 0 ? sys : std::string();
    content.append(turns[i].content);
    if (turns[i].role == "user") append(out, bos, "[INST] ", trim(content), " [/INST]");
    else append(out, " ", trim(content), " ", eos);
  }
  return out;
}

std::string render_mistral(const std::vector<ChatMessage>& messages, std::string_view bos, std::string_view eos) {
  const bool has_system = !messages.empty() && messages[0].role == "system";
  auto [system, turns] = split_system(messages);
  require_alternating(turns);
  std::string out(bos);
  for (std::size_t i = 0; i < turns.size(); ++i) {
    if (turns[i].role == "user") {
      append(out, "[INST] ");
      if (i == 0 && has_system) append(out, system, "\n\n");
      append(out, turns[i].content, "[/INST]");
    } else {
      append(out, " ", turns[i].content, eos);
    }
  }
  return out;
}

std::string render_gemma(const std::vector<ChatMessage>& messages, bool gen, std::string_view bos) {
  const bool has_system = !messages.empty() && messages[0].role == "system";
  auto [system, turns] = split_system(messages);
  require_alternating(turns);
  std::string out(bos);
  for (std::size_t i = 0; i < turns.size(); ++i) {
    const std::string_view role = turns[i].role == "assistant" ? std::string_view("model") : turns[i].role;
    append(out, "<start_of_turn>", role, "\n");
    if (i == 0 && has_system) append(out, system, "\n\n");
    append(out, trim(turns[i].content), "<end_of_turn>\n");
  }
  if (gen) out += "<start_of_turn>model\n";
  return out;
}

}  // namespace

std::optional<ChatFormat> detect_chat_format(std::string_view t) {
  if (contains(t, "<|start_header_id|>")) return ChatFormat{ChatFamily::Llama3, {}, false};
  if (contains(t, "<|im_start|>"))
    return ChatFormat{ChatFamily::ChatMl, chatml_default_system(t), contains(t, "</think>"),
                      contains(t, "enable_thinking")};
  if (contains(t, "<start_of_turn>")) return ChatFormat{ChatFamily::Gemma, {}, false};
  if (contains(t, "<|user|>") && contains(t, "<|end|>")) return ChatFormat{ChatFamily::Phi3, {}, false};
  if (contains(t, "[INST]") && contains(t, "<<SYS>>")) return ChatFormat{ChatFamily::Llama2, {}, false};
  if (contains(t, "[INST]")) return ChatFormat{ChatFamily::Mistral, {}, false};
  return std::nullopt;
}

std::optional<ChatFormat> chat_format_by_name(std::string_view name) {
  if (name == "chatml") return ChatFormat{ChatFamily::ChatMl, {}, false};
  if (name == "llama2") return ChatFormat{ChatFamily::Llama2, {}, false};
  if (name == "llama3") return ChatFormat{ChatFamily::Llama3, {}, false};
  if (name == "mistral") return ChatFormat{ChatFamily::Mistral, {}, false};
  if (name == "phi3") return ChatFormat{ChatFamily::Phi3, {}, false};
  if (name == "gemma") return ChatFormat{ChatFamily::Gemma, {}, false};
  return std::nullopt;
}

std::string_view chat_family_name(ChatFamily family) {
  switch (family) {
    case ChatFamily::ChatMl: return "chatml";
    case ChatFamily::Llama2: return "llama2";
    case ChatFamily::Llama3: return "llama3";
    case ChatFamily::Mistral: return "mistral";
    case ChatFamily::Phi3: return "phi3";
    case ChatFamily::Gemma: return "gemma";
  }
  return "?";
}

std::string render_chat(const ChatFormat& format, const std::vector<ChatMessage>& messages, bool gen,
                        std::string_view bos, std::string_view eos, bool enable_thinking) {
  switch (format.family) {
    case ChatFamily::ChatMl: return render_chatml(format, messages, gen, enable_thinking);
    case ChatFamily::Llama2: return render_llama2(messages, bos, eos);
    case ChatFamily::Mistral: return render_mistral(messages, bos, eos);
    case ChatFamily::Gemma: return render_gemma(messages, gen, bos);
    case ChatFamily::Llama3: {
      std::string out(bos);
      for (const auto& m : messages)
        append(out, "<|start_header_id|>", m.role, "<|end_header_id|>\n\n", trim(m.content), "<|eot_id|>");
      if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    }
    case ChatFamily::Phi3: {
      std::string out;
      for (const auto& m : messages) append(out, "<|", m.role, "|>\n", m.content, "<|end|>\n");
      append(out, gen ? std::string_view("<|assistant|>\n") : eos);
      return out;
    }
  }
  return {};
}

}  // namespace lamina::model

#include "openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "api_error.h"

namespace lamina::serve {
namespace {

using json = nlohmann::json;

// OpenAI allows up to 20 alternatives per position.
constexpr int64_t kMaxTopLogprobs = 20;

std::string kind_of(const json& v) {
  switch (v.type()) {
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a decimal";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "null";
  }
}

ApiError wrong_type(const std::string& param, const std::string& expected, const json& v) {
  return bad_request("Invalid type for '" + param + "': expected " + expected + ", but got " + kind_of(v) +
                         " instead.",
                     param, "invalid_type");
}

ApiError invalid_value(const std::string& param, const std::string& why) {
  return bad_request("Invalid value for '" + param + "': " + why, param, "invalid_value");
}

std::string number_text(double x) { return json(x).dump(); }

// A present, non-null field (OpenAI treats null like an absent field).
const json* field(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> number_field(const json& body, const char* key, double lo, double hi) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw wrong_type(key, "a number", *v);
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi)
    throw invalid_value(key, "expected a number from " + number_text(lo) + " to " + number_text(hi) + ", got " +
                                 v->dump() + ".");
  return x;
}

std::optional<int64_t> integer_field(const json& body, const char* key, int64_t lo, int64_t hi) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) throw wrong_type(key, "an integer", *v);
  const bool too_large =
      v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  const int64_t x = too_large ? std::numeric_limits<int64_t>::max() : v->get<int64_t>();
  if (too_large || x < lo || x > hi)
    throw invalid_value(key, "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                                 ", got " + v->dump() + ".");
  return x;
}

std::optional<bool> bool_field(const json& body, const char* key) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw wrong_type(key, "a boolean", *v);
  return v->get<bool>();
}

std::optional<std::string> string_field(const json& body, const char* key) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw wrong_type(key, "a string", *v);
  return v->get<std::string>();
}

std::vector<std::string> parse_stop(const json& body, std::size_t max_count) {
  const json* v = field(body, "stop");
  if (!v) return {};
  std::vector<std::string> stop;
  if (v->is_string()) {
    stop.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > max_count)
      throw invalid_value("stop", "at most " + std::to_string(max_count) + " stop strings are allowed.");
    for (const json& s : *v) {
      if (!s.is_string()) throw wrong_type("stop", "a string or an array of strings", s);
      stop.push_back(s.get<std::string>());
    }
  } else {
    throw wrong_type("stop", "a string or an array of strings", *v);
  }
  for (const std::string& s : stop)
    if (s.empty()) throw invalid_value("stop", "stop strings must not be empty.");
  return stop;
}

// Fields of OpenAI's API this server does not implement: refused when they
// ask for something other than the default, accepted (and ignored) otherwise.
void refuse_unsupported(const json& body) {
  if (const auto b = integer_field(body, "best_of", 1, std::numeric_limits<int32_t>::max()); b && *b != 1)
    throw invalid_value("best_of", "only best_of = 1 is supported (use n for several choices).");
  if (bool_field(body, "echo").value_or(false)) throw invalid_value("echo", "echo is not supported.");
  if (const auto s = string_field(body, "suffix"); s && !s->empty())
    throw invalid_value("suffix", "suffix is not supported.");
  if (const json* f = field(body, "functions"); f && !(f->is_array() && f->empty()))
    throw invalid_value("functions", "functions is not supported (use tools).");
}

std::string message_param(std::size_t index, const char* member) {
  return "messages[" + std::to_string(index) + "]." + member;
}

// Content: a string, an array of {"type": "text", "text": ...} parts
// (concatenated), or null for an assistant turn.
std::string message_content(const json& message, std::size_t index, const std::string& role) {
  const std::string param = message_param(index, "content");
  const json* content = field(message, "content");
  if (!content) {
    if (role == "assistant") return {};
    throw bad_request("Missing required parameter: '" + param + "'.", param, "missing_required_parameter");
  }
  if (content->is_string()) return content->get<std::string>();
  if (!content->is_array()) throw wrong_type(param, "a string or an array of content parts", *content);
  std::string text;
  for (std::size_t i = 0; i < content->size(); ++i) {
    const json& part = (*content)[i];
    const std::string part_param = param + "[" + std::to_string(i) + "]";
    if (!part.is_object()) throw wrong_type(part_param, "an object", part);
    const json* type = field(part, "type");
    if (!type || *type != "text")
      throw invalid_value(part_param + ".type", "only text content parts are supported.");
    const json* part_text = field(part, "text");
    if (!part_text || !part_text->is_string())
      throw wrong_type(part_param + ".text", "a string", part_text ? *part_text : json());
    text += part_text->get<std::string>();
  }
  return text;
}

std::vector<model::ChatMessage> parse_messages(const json& body) {
  const json* messages = field(body, "messages");
  if (!messages) throw bad_request("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
  if (!messages->is_array()) throw wrong_type("messages", "an array", *messages);
  if (messages->empty()) throw invalid_value("messages", "expected at least one message.");
  std::vector<model::ChatMessage> out;
  for (std::size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    if (!m.is_object()) throw wrong_type("messages[" + std::to_string(i) + "]", "an object", m);
    const json* role = field(m, "role");
    const std::string role_param = message_param(i, "role");
    if (!role) throw bad_request("Missing required parameter: '" + role_param + "'.", role_param,
                                 "missing_required_parameter");
    if (!role->is_string()) throw wrong_type(role_param, "a string", *role);
    std::string name = role->get<std::string>();
    if (name == "developer") name = "system";  // OpenAI's newer name for the system role
    if (name != "system" && name != "user" && name != "assistant" && name != "tool")
      throw invalid_value(role_param, "'" + role->get<std::string>() +
                                          "' is not supported (system, developer, user, assistant or tool).");
    std::string content = message_content(m, i, name);
    // The other fields (tool_calls, tool_call_id, name, ...) reach the template as
    // given; a null content stays null, as transformers passes it.
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (it.key() != "role" && it.key() != "content") extra[it.key()] = it.value();
    }
    if (const json* c = field(m, "content"); !c && m.contains("content")) extra["content"] = nullptr;
    shape_tool_calls(extra, i);
    out.push_back({std::move(name), std::move(content), extra.empty() ? std::string() : extra.dump()});
  }
  return out;
}

// A prompt: a string, token ids, or a one-element array of either.
CompletionPrompt parse_prompt(const json& body) {
  const json* prompt = field(body, "prompt");
  if (!prompt) throw bad_request("Missing required parameter: 'prompt'.", "prompt", "missing_required_parameter");
  const json* p = prompt;
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
  CompletionPrompt out;
  if (p->is_string()) {
    out.text = p->get<std::string>();
    return out;
  }
  if (!p->is_array()) throw wrong_type("prompt", "a string or an array of token ids", *prompt);
  if (p->empty()) throw invalid_value("prompt", "the prompt is empty.");
  out.is_ids = true;
  for (const json& id : *p) {
    if (id.is_string() || id.is_array()) throw invalid_value("prompt", "only one prompt per request is supported.");
    if (!id.is_number_integer()) throw wrong_type("prompt", "an array of token ids", id);
    if (id.is_number_unsigned() ? id.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())
                                : id.get<int64_t>() < 0)
      throw invalid_value("prompt", "token id " + id.dump() + " is outside the vocabulary.");
    out.ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return out;
}

model::SamplerOptions parse_sampling(const json& body, const model::SamplerOptions& defaults) {
  model::SamplerOptions s = defaults;
  if (const auto v = number_field(body, "temperature", 0.0, 2.0)) s.temperature = static_cast<float>(*v);
  if (const auto v = number_field(body, "top_p", 0.0, 1.0)) s.top_p = static_cast<float>(*v);
  if (const auto v = integer_field(body, "top_k", 0, std::numeric_limits<int32_t>::max()))
    s.top_k = static_cast<int32_t>(*v);
  if (const auto v = number_field(body, "min_p", 0.0, 1.0)) s.min_p = static_cast<float>(*v);
  if (const auto v = number_field(body, "presence_penalty", -2.0, 2.0)) s.presence_penalty = static_cast<float>(*v);
  if (const auto v = number_field(body, "frequency_penalty", -2.0, 2.0)) s.frequency_penalty = static_cast<float>(*v);
  if (const auto v = number_field(body, "repeat_penalty", 0.0, 100.0)) s.repeat_penalty = static_cast<float>(*v);
  if (const auto v = integer_field(body, "repeat_last_n", -1, std::numeric_limits<int32_t>::max()))
    s.repeat_last_n = static_cast<int32_t>(*v);
  return s;
}

// {"token id": bias}: ids as decimal strings, biases from -100 to 100. The
// engine checks the ids against the vocabulary.
std::vector<model::TokenBias> parse_logit_bias(const json& body) {
  const json* v = field(body, "logit_bias");
  if (!v) return {};
  if (!v->is_object()) throw wrong_type("logit_bias", "an object mapping token ids to biases", *v);
  std::vector<model::TokenBias> out;
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string& key = it.key();
    const std::string param = "logit_bias." + key;
    const bool digits = !key.empty() && key.size() <= 10 &&
                        key.find_first_not_of("0123456789") == std::string::npos;
    const long long id = digits ? std::stoll(key) : -1;
    if (id < 0 || id > std::numeric_limits<int32_t>::max())
      throw invalid_value("logit_bias", "'" + key + "' is not a token id (a non-negative integer as a string).");
    if (!it.value().is_number()) throw wrong_type(param, "a number", it.value());
    const double bias = it.value().get<double>();
    if (!std::isfinite(bias) || std::abs(bias) > model::kMaxLogitBias)
      throw invalid_value(param, "expected a number from -100 to 100, got " + it.value().dump() + ".");
    out.push_back({static_cast<int32_t>(id), static_cast<float>(bias)});
  }
  return out;
}

// Any JSON integer of int64 or uint64 range; negative seeds wrap, as OpenAI's are signed.
std::optional<uint64_t> parse_seed(const json& body) {
  const json* v = field(body, "seed");
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) throw wrong_type("seed", "an integer", *v);
  return v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>());
}

int32_t parse_max_tokens(const json& body, Endpoint endpoint, const RequestDefaults& d) {
  const int64_t cap = d.max_tokens_cap > 0 ? d.max_tokens_cap : std::numeric_limits<int32_t>::max();
  // The newer name wins when a client sends both.
  for (const char* key : {"max_completion_tokens", "max_tokens"}) {
    if (const auto n = integer_field(body, key, 1, cap)) return static_cast<int32_t>(*n);
  }
  const int32_t fallback = endpoint == Endpoint::ChatCompletions ? d.chat_max_tokens : d.completion_max_tokens;
  if (d.max_tokens_cap > 0 && (fallback < 0 || fallback > d.max_tokens_cap)) return d.max_tokens_cap;
  return fallback;
}

void parse_logprobs(const json& body, Endpoint endpoint, ParsedRequest& r) {
  if (endpoint == Endpoint::ChatCompletions) {
    r.logprobs = bool_field(body, "logprobs").value_or(false);
    const auto top = integer_field(body, "top_logprobs", 0, kMaxTopLogprobs);
    if (top && !r.logprobs)
      throw invalid_value("top_logprobs", "top_logprobs requires logprobs to be true.");
    r.completion.top_logprobs = r.logprobs ? static_cast<int32_t>(top.value_or(0)) : -1;
  } else {
    const auto n = integer_field(body, "logprobs", 0, kMaxTopLogprobs);
    r.logprobs = n.has_value();
    r.completion.top_logprobs = n ? static_cast<int32_t>(*n) : -1;
  }
}

void parse_streaming(const json& body, ParsedRequest& r) {
  r.stream = bool_field(body, "stream").value_or(false);
  const json* options = field(body, "stream_options");
  if (!options) return;
  if (!r.stream)
    throw invalid_value("stream_options", "stream_options is only allowed when stream is true.");
  if (!options->is_object()) throw wrong_type("stream_options", "an object", *options);
  if (const json* u = field(*options, "include_usage")) {
    if (!u->is_boolean()) throw wrong_type("stream_options.include_usage", "a boolean", *u);
    r.include_usage = u->get<bool>();
  }
}

}  // namespace

model::SamplerOptions RequestDefaults::openai_sampling() {
  model::SamplerOptions s;
  s.temperature = 1.0f;
  s.top_k = 0;
  s.top_p = 1.0f;
  s.min_p = 0.0f;
  return s;
}

ParsedRequest parse_completion_request(const nlohmann::json& body, Endpoint endpoint,
                                       const RequestDefaults& defaults, uint64_t random_seed) {
  ParsedRequest r;
  r.endpoint = endpoint;
  if (const json* m = field(body, "model")) {
    if (!m->is_string()) throw wrong_type("model", "a string", *m);
    r.model = m->get<std::string>();
  }
  refuse_unsupported(body);
  if (endpoint == Endpoint::ChatCompletions) {
    r.messages = parse_messages(body);
    r.tools = parse_tool_request(body);
    r.chat.tools_json = r.tools.tools_json;
    r.chat.add_generation_prompt = bool_field(body, "add_generation_prompt").value_or(true);
    if (const json* kwargs = field(body, "chat_template_kwargs")) {
      if (!kwargs->is_object()) throw wrong_type("chat_template_kwargs", "an object", *kwargs);
      if (const json* t = field(*kwargs, "enable_thinking")) {
        if (!t->is_boolean()) throw wrong_type("chat_template_kwargs.enable_thinking", "a boolean", *t);
        r.chat.flags.emplace_back("enable_thinking", t->get<bool>());
      }
      if (!kwargs->empty()) r.chat.kwargs_json = kwargs->dump();
    }
  } else {
    r.prompt = parse_prompt(body);
  }
  r.completion.sampling = parse_sampling(body, defaults.sampling);
  r.completion.sampling.logit_bias = parse_logit_bias(body);
  if (const auto n = integer_field(body, "n", 1, std::max<uint32_t>(defaults.max_n, 1))) r.n = static_cast<uint32_t>(*n);
  const auto seed = parse_seed(body);
  r.seed_given = seed.has_value();
  r.completion.sampling.seed = seed.value_or(random_seed);
  r.completion.max_tokens = parse_max_tokens(body, endpoint, defaults);
  r.completion.stop = parse_stop(body, defaults.max_stop_strings);
  r.completion.stop_at_eog = !bool_field(body, "ignore_eos").value_or(false);
  r.completion.skip_special_tokens = bool_field(body, "skip_special_tokens").value_or(true);
  parse_logprobs(body, endpoint, r);
  parse_streaming(body, r);
  if (const auto user = string_field(body, "user")) r.user = *user;
  return r;
}

}  // namespace lamina::serve

// Parsing and validating the JSON body of /v1/chat/completions and
// /v1/completions into what the engine runs. Every rejection is an ApiError
// (400) naming the offending parameter.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lamina/model/chat.h"
#include "lamina/model/chat_template.h"
#include "lamina/model/engine.h"
#include "lamina/model/grammar.h"
#include "tool_request.h"

namespace lamina::serve {

enum class Endpoint { ChatCompletions, Completions };

// What the server falls back to for fields a request leaves out, and the
// limits it enforces.
struct RequestDefaults {
  // OpenAI's defaults unless the server was started with others: temperature
  // 1, top_p 1, no top-k or min-p, no penalties.
  model::SamplerOptions sampling = openai_sampling();
  int32_t chat_max_tokens = -1;        // -1: until the context is full
  int32_t completion_max_tokens = 16;  // OpenAI's default for the legacy endpoint
  int32_t max_tokens_cap = 0;          // > 0: larger max_tokens are refused
  std::size_t max_stop_strings = 16;
  uint32_t max_n = 16;                 // choices per request (n); the server also caps it at its slots

  static model::SamplerOptions openai_sampling();
};

// The prompt of /v1/completions: text, or token ids given directly.
struct CompletionPrompt {
  std::string text;
  std::vector<int32_t> ids;
  bool is_ids = false;
};

struct ParsedRequest {
  Endpoint endpoint = Endpoint::ChatCompletions;
  std::string model;  // empty when the request names none
  std::vector<model::ChatMessage> messages;  // chat
  // Chat: add_generation_prompt, the tools and chat_template_kwargs, as the template
  // gets them (chat_template_kwargs.enable_thinking also as a flag, for the built-in
  // formats).
  model::ChatRenderOptions chat;
  ToolRequest tools;                         // chat: tools, tool_choice, parallel_tool_calls
  CompletionPrompt prompt;                   // completions
  model::CompletionRequest completion;       // everything but the prompt ids and the constraint
  std::shared_ptr<const model::Grammar> grammar;  // structured output (parse_output_grammar); null: free text
  // Choices: n samples of the one prompt; sample i runs with seed + i.
  uint32_t n = 1;
  bool seed_given = false;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool logprobs = false;       // log-probabilities were asked for
  std::string user;
};

// Validates a parsed body for `endpoint`. A request without a seed gets
// `random_seed`.
ParsedRequest parse_completion_request(const nlohmann::json& body, Endpoint endpoint, const RequestDefaults& defaults,
                                       uint64_t random_seed);

}  // namespace lamina::serve

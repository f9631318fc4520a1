// The JSON shapes of OpenAI's responses: completions, chat completions,
// their streamed chunks (Server-Sent Events), usage and errors. Members keep
// the order OpenAI writes them in (id, object, created, model, ...).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api_error.h"
#include "lamina/model/engine.h"
#include "lamina/model/tokenizer.h"
#include "openai_request.h"

namespace lamina::serve {

using ResponseJson = nlohmann::ordered_json;

// What every response and chunk of one request repeats.
struct ResponseMeta {
  Endpoint endpoint = Endpoint::ChatCompletions;
  std::string id;       // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
  std::string system_fingerprint;
};

// "chatcmpl-" or "cmpl-" followed by 29 characters drawn from `random`.
std::string make_response_id(Endpoint endpoint, uint64_t random);

// Serialises with invalid UTF-8 replaced by U+FFFD (model output may hold
// bytes that never form a character).
std::string dump_json(const ResponseJson& value);
std::string dump_json(const nlohmann::json& value);

ResponseJson error_json(const ApiError& error);

// "stop" or "length" (cancelled and failed requests never reach a response).
std::string_view openai_finish_reason(model::FinishReason reason);

ResponseJson usage_json(const model::CompletionResult& result);
// The usage of the n choices of one request: the prompt counted once, the
// completions summed.
ResponseJson usage_json(std::span<const model::CompletionResult> choices);

// The "logprobs" member of a choice: {"content": [...]} for chat,
// {"tokens", "token_logprobs", "top_logprobs", "text_offset"} for
// completions; `text_offset` is where the first token's text starts.
ResponseJson logprobs_json(Endpoint endpoint, const model::Tokenizer& tokenizer,
                             std::span<const model::TokenEvent> tokens, std::size_t text_offset = 0);

// The whole (non-streamed) response. `logprobs` is null when not asked for.
ResponseJson completion_response(const ResponseMeta& meta, const model::CompletionResult& result,
                                   const ResponseJson& logprobs);
// With n choices: choices[i] from results[i] and logprobs[i] (one each).
ResponseJson completion_response(const ResponseMeta& meta, std::span<const model::CompletionResult> results,
                                   std::span<const ResponseJson> logprobs);

// The Server-Sent Events of one streamed response, in order: start(), then
// tokens() as they come, then finish() or error(). Each returns the bytes to
// send (possibly none). With n choices, one encoder per choice (`index`)
// gives start(), tokens() and finish_choice(); then one of them close().
class StreamEncoder {
 public:
  // `tokenizer` renders log-probabilities; null when they were not asked for.
  StreamEncoder(ResponseMeta meta, bool include_usage, const model::Tokenizer* tokenizer, std::size_t index = 0);

  std::string start();
  std::string tokens(std::span<const model::TokenEvent> tokens);
  // `finish_reason` empty: the one `result` ended with.
  std::string finish(const model::CompletionResult& result, std::string_view finish_reason = {});
  std::string error(const ApiError& error);
  // The end of this choice: what the text held back and the finish reason
  // (`finish_reason` empty: the one `result` ended with).
  std::string finish_choice(const model::CompletionResult& result, std::string_view finish_reason = {});
  // The end of the stream: the usage of all choices (when asked for), [DONE].
  std::string close(std::span<const model::CompletionResult> choices);

  // A chat chunk with this delta and the log-probabilities of `tokens` (none:
  // null), for replies whose text is reshaped before it is sent (tool calls).
  std::string delta(ResponseJson delta, std::span<const model::TokenEvent> tokens);
  bool wants_logprobs() const { return tokenizer_ != nullptr; }

 private:
  ResponseJson chunk(ResponseJson choice) const;

  ResponseMeta meta_;
  bool include_usage_;
  const model::Tokenizer* tokenizer_;
  std::size_t index_;
  std::size_t text_offset_ = 0;
};

// One event: "data: <json>\n\n".
std::string sse_event(const ResponseJson& value);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace lamina::serve

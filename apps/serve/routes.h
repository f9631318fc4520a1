// The route handlers. Each throws ApiError for a request it refuses; the
// connection turns that into the error response.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api_error.h"
#include "openai_request.h"
#include "request_record.h"
#include "serve_context.h"

namespace lamina::serve {

// A whole answer.
struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond the framing ones
};

// {"error": {...}} with the error's status (and Retry-After for 429 and 503).
Reply error_reply(const ApiError& error);

// GET /health: {"status": "ok"}, or 503 while shutting down.
Reply handle_health(ServeContext& ctx);
// GET /v1/models and GET /v1/models/{id}.
Reply handle_models(ServeContext& ctx);
Reply handle_model(ServeContext& ctx, std::string_view id);
// GET /metrics (Prometheus text format).
Reply handle_metrics(ServeContext& ctx);
// POST /tokenize {"content"} -> {"tokens"}; POST /detokenize {"tokens"} -> {"content"}.
Reply handle_tokenize(ServeContext& ctx, std::string_view body);
Reply handle_detokenize(ServeContext& ctx, std::string_view body);
// POST /v1/embeddings (OpenAI's shape); waits for the engine.
Reply handle_embeddings(ServeContext& ctx, std::string_view body);

class CompletionChannel;

// POST /v1/chat/completions and /v1/completions once the engine has taken
// the request: the connection serving it pulls its answer from here.
class RunningCompletion {
 public:
  // Validates, renders and tokenizes `body`, then queues it on the engine
  // (429 when its queue is full). `notify` is called on the engine thread
  // whenever tokens or the end arrive; it must not block.
  static std::unique_ptr<RunningCompletion> start(ServeContext& ctx, Endpoint endpoint, std::string_view body,
                                                  RequestRecord& record, std::function<void()> notify);
  ~RunningCompletion();  // cancels a request that has not ended
  RunningCompletion(const RunningCompletion&) = delete;
  RunningCompletion& operator=(const RunningCompletion&) = delete;

  bool streamed() const;
  // The engine has finished it (or it was cancelled).
  bool ended() const;
  // Not streamed: the answer once the request has ended, nullopt before.
  std::optional<Reply> reply();
  // Streamed: the Server-Sent Events that arrived since the last call (the
  // first call starts the stream); `ended` once the last one is included.
  std::string events(bool& ended);
  // The client went away: the engine drops the request.
  void cancel();

 private:
  struct State;
  explicit RunningCompletion(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The comment line a stream sends while nothing else comes, so that proxies
// keep it open and a client that went away is found.
inline constexpr std::string_view kSseKeepAlive = ": keep-alive\n\n";

}  // namespace lamina::serve

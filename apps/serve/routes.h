// The route handlers. Each throws ApiError for a request it refuses; the
// server turns that into the error response.
#pragma once

#include <httplib.h>

#include "openai_request.h"
#include "serve_context.h"

namespace lamina::serve {

// POST /v1/chat/completions and POST /v1/completions, streamed or not.
void handle_completion(ServeContext& ctx, Endpoint endpoint, const httplib::Request& req, httplib::Response& res);

// GET /health: {"status": "ok"}, or 503 while shutting down.
void handle_health(ServeContext& ctx, const httplib::Request& req, httplib::Response& res);
// GET /v1/models and GET /v1/models/{id}.
void handle_models(ServeContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_model(ServeContext& ctx, const httplib::Request& req, httplib::Response& res);
// GET /metrics (Prometheus text format).
void handle_metrics(ServeContext& ctx, const httplib::Request& req, httplib::Response& res);
// POST /tokenize {"content"} -> {"tokens"}; POST /detokenize {"tokens"} -> {"content"}.
void handle_tokenize(ServeContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_detokenize(ServeContext& ctx, const httplib::Request& req, httplib::Response& res);

}  // namespace lamina::serve

// Which route a request goes to, decided from its header alone (before any
// body is read): unknown paths, wrong methods and missing keys are refused
// there. Also the CORS answers (--cors-origin).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "api_error.h"
#include "serve_context.h"

namespace lamina::serve {

enum class Work {
  Health,
  Models,
  Model,
  Metrics,
  Tokenize,
  Detokenize,
  Embeddings,
  ChatCompletions,
  Completions,
  Preflight,  // a CORS preflight (OPTIONS), answered at once
};

// Work sized by the client (JSON bodies, tokenization, templates) runs on
// the worker threads, never on the threads that serve connections.
bool runs_on_worker(Work work);

struct Route {
  Work work = Work::Health;
  std::string model_id;  // Work::Model: the id in the path
  bool head = false;     // a HEAD request for a GET route: the header only
  std::string allow;     // the route's method, for Allow and CORS answers
};

// What routing reads from a request's header.
struct RequestHead {
  std::string_view method;
  std::string_view target;         // as sent: path and query
  std::string_view authorization;  // empty when absent
  bool has_origin = false;         // a browser's (CORS) request
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// A request refused by its header alone.
struct Refusal {
  ApiError error;
  HeaderList headers;  // Allow, for a 405
};

// The route, or why the request is refused (401, 404, 405).
std::variant<Route, Refusal> route_request(const ServerOptions& options, const RequestHead& head);

// The label of a target in the metrics: the route it names, else "other"
// (client-chosen paths must not create series).
std::string route_label(std::string_view target);

// The path of a target (before '?'), percent-decoded; empty when the target
// has no path.
std::string target_path(std::string_view target);

// The CORS headers of an answer to a request from `origin`; none when CORS
// is off or the origin is not allowed. A preflight also gets the methods and
// the headers it asked for (`requested_headers`).
HeaderList cors_headers(const ServerOptions& options, std::string_view origin, const Route* preflight,
                        std::string_view requested_headers);

}  // namespace lamina::serve

#include "http_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "api_error.h"
#include "openai_response.h"
#include "request_record.h"
#include "routes.h"

namespace lamina::serve {
namespace {

using httplib::Request;
using httplib::Response;
using HandlerResponse = httplib::Server::HandlerResponse;

struct KnownRoute {
  std::string_view method;
  std::string_view path;
};

constexpr std::array<KnownRoute, 7> kRoutes{{
    {"POST", "/v1/chat/completions"},
    {"POST", "/v1/completions"},
    {"GET", "/v1/models"},
    {"GET", "/health"},
    {"GET", "/metrics"},
    {"POST", "/tokenize"},
    {"POST", "/detokenize"},
}};
constexpr std::string_view kModelPrefix = "/v1/models/";

// Connections beyond those being served wait in the kernel's accept queue.
constexpr int kListenBacklog = 1024;
constexpr int kKeepAliveSeconds = 5;

// The label of a path in the metrics: the route it names, else "other"
// (client-chosen paths must not create series).
std::string route_label(std::string_view path) {
  for (const KnownRoute& r : kRoutes)
    if (path == r.path) return std::string(r.path);
  if (path.starts_with(kModelPrefix) && path.size() > kModelPrefix.size()) return "/v1/models/:id";
  return "other";
}

std::optional<std::string_view> allowed_method(std::string_view path) {
  for (const KnownRoute& r : kRoutes)
    if (path == r.path) return r.method;
  if (path.starts_with(kModelPrefix)) return "GET";
  return std::nullopt;
}

// Compares in time independent of where the strings differ.
bool same_secret(std::string_view given, std::string_view expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  return diff == 0;
}

// The error of a response cpp-httplib produced on its own (no route ran or the request was unreadable).
ApiError library_error(int status, const Request& req, std::size_t max_body) {
  switch (status) {
    case 404:
      return ApiError(404, "Invalid URL (" + req.method + " " + req.path + ")", "invalid_request_error", {},
                      "unknown_url");
    case 413:
      return ApiError(413, "The request body is larger than the limit of " + std::to_string(max_body) + " bytes.",
                      "invalid_request_error", {}, "request_too_large");
    case 414: return ApiError(414, "The request URI is too long.", "invalid_request_error");
    case 400: return ApiError(400, "The HTTP request could not be parsed.", "invalid_request_error");
    default:
      return ApiError(status, "The request failed with HTTP status " + std::to_string(status) + ".",
                      status >= 500 ? "server_error" : "invalid_request_error");
  }
}

// Records the error for the error handler, which writes the body.
void fail(Response& res, const ApiError& error) {
  current_request().error = error;
  res.status = error.status();
  if (error.status() == 429 || error.status() == 503) res.set_header("Retry-After", "1");
}

using RouteFn = void (*)(ServeContext&, const Request&, Response&);

httplib::Server::Handler guarded(ServeContext& ctx, RouteFn fn) {
  return [&ctx, fn](const Request& req, Response& res) {
    try {
      fn(ctx, req, res);
    } catch (const ApiError& e) {
      fail(res, e);
    } catch (const std::exception& e) {
      fail(res, ApiError(500, std::string("Internal error: ") + e.what(), "server_error"));
    }
  };
}

void chat_completions(ServeContext& ctx, const Request& req, Response& res) {
  handle_completion(ctx, Endpoint::ChatCompletions, req, res);
}

void completions(ServeContext& ctx, const Request& req, Response& res) {
  handle_completion(ctx, Endpoint::Completions, req, res);
}

}  // namespace

// cpp-httplib listens with a backlog of 5: too few for hundreds of clients
// connecting at once. Listening again on the bound socket raises it.
class HttpServer::Listener : public httplib::Server {
 public:
  bool raise_backlog(int backlog) { return ::listen(svr_sock_.load(), backlog) == 0; }
};

HttpServer::HttpServer(ServeContext& ctx) : ctx_(ctx), listener_(std::make_unique<Listener>()) {
  Listener& s = *listener_;
  const ServerOptions& o = ctx.options;
  const int threads = o.http_threads;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  s.set_payload_max_length(o.max_body_bytes);
  s.set_read_timeout(o.timeout_s, 0);
  s.set_write_timeout(o.timeout_s, 0);
  // An idle connection holds a worker thread: close it soon.
  s.set_keep_alive_timeout(std::min(o.timeout_s, kKeepAliveSeconds));
  s.set_keep_alive_max_count(1000);
  s.set_tcp_nodelay(true);

  s.set_pre_routing_handler([&ctx](const Request& req, Response& res) {
    reset_current_request();
    current_request().route = route_label(req.path);
    // Refusals below leave the body unread, so the connection cannot carry another request.
    const auto refuse = [&res](const ApiError& error) {
      fail(res, error);
      res.set_header("Connection", "close");
      return HandlerResponse::Handled;
    };
    const std::string& key = ctx.options.api_key;
    if (!key.empty() && req.path != "/health") {
      const std::string auth = req.get_header_value("Authorization");
      constexpr std::string_view kBearer = "Bearer ";
      if (auth.empty())
        return refuse(ApiError(401, "You didn't provide an API key: pass it as 'Authorization: Bearer <key>'.",
                               "invalid_request_error", {}, "invalid_api_key"));
      if (!auth.starts_with(kBearer) || !same_secret(std::string_view(auth).substr(kBearer.size()), key))
        return refuse(ApiError(401, "Incorrect API key provided.", "invalid_request_error", {}, "invalid_api_key"));
    }
    const auto allowed = allowed_method(req.path);
    const bool head_of_get = req.method == "HEAD" && allowed == "GET";
    if (allowed && req.method != *allowed && !head_of_get) {
      res.set_header("Allow", std::string(*allowed));
      return refuse(ApiError(405, req.method + " is not allowed on " + req.path + "; use " + std::string(*allowed) + ".",
                             "invalid_request_error", {}, "method_not_allowed"));
    }
    return HandlerResponse::Unhandled;
  });

  s.set_error_handler(httplib::Server::HandlerWithResponse([&ctx](const Request& req, Response& res) {
    const RequestRecord& rec = current_request();
    const ApiError error = rec.error ? *rec.error : library_error(res.status, req, ctx.options.max_body_bytes);
    res.set_content(dump_json(error_json(error)), "application/json");
    return HandlerResponse::Handled;
  }));

  s.set_logger([&ctx](const Request& req, const Response& res) {
    RequestRecord& rec = current_request();
    ctx.metrics.count_http(rec.route, res.status);
    LogLineInput in;
    in.method = req.method;
    in.path = req.path;
    in.remote_addr = req.remote_addr;
    in.remote_port = req.remote_port;
    in.status = res.status;
    in.duration_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - rec.start).count();
    const std::string line = format_log_line(in, rec, std::chrono::system_clock::now());
    std::fwrite(line.data(), 1, line.size(), stderr);
    reset_current_request();
  });

  s.Post("/v1/chat/completions", guarded(ctx, chat_completions));
  s.Post("/v1/completions", guarded(ctx, completions));
  s.Get("/v1/models", guarded(ctx, handle_models));
  s.Get("/v1/models/(.+)", guarded(ctx, handle_model));
  s.Get("/health", guarded(ctx, handle_health));
  s.Get("/metrics", guarded(ctx, handle_metrics));
  s.Post("/tokenize", guarded(ctx, handle_tokenize));
  s.Post("/detokenize", guarded(ctx, handle_detokenize));
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  const ServerOptions& o = ctx_.options;
  int port = o.port;
  if (port == 0) {
    port = listener_->bind_to_any_port(o.host);
    if (port < 0) throw std::runtime_error("cannot listen on " + o.host + " (not a local address?)");
  } else if (!listener_->bind_to_port(o.host, port)) {
    throw std::runtime_error("cannot listen on " + o.host + ":" + std::to_string(port) +
                             " (port in use, or not a local address?)");
  }
  listener_->raise_backlog(kListenBacklog);
  return port;
}

void HttpServer::serve() { listener_->listen_after_bind(); }

void HttpServer::begin_draining() { ctx_.draining.store(true); }

void HttpServer::stop() { listener_->stop(); }

}  // namespace lamina::serve

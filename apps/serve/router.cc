#include "router.h"

#include <algorithm>
#include <array>
#include <optional>

namespace lamina::serve {
namespace {

struct KnownRoute {
  std::string_view method;
  std::string_view path;
  Work work;
};

constexpr std::array<KnownRoute, 8> kRoutes{{
    {"POST", "/v1/chat/completions", Work::ChatCompletions},
    {"POST", "/v1/completions", Work::Completions},
    {"GET", "/v1/models", Work::Models},
    {"GET", "/health", Work::Health},
    {"GET", "/metrics", Work::Metrics},
    {"POST", "/tokenize", Work::Tokenize},
    {"POST", "/detokenize", Work::Detokenize},
    {"POST", "/v1/embeddings", Work::Embeddings},
}};
constexpr std::string_view kModelPrefix = "/v1/models/";
constexpr std::string_view kBearer = "Bearer ";
// How long a browser may reuse a preflight's answer.
constexpr std::string_view kPreflightMaxAge = "600";

std::optional<KnownRoute> known_route(std::string_view path) {
  for (const KnownRoute& r : kRoutes)
    if (path == r.path) return r;
  if (path.starts_with(kModelPrefix) && path.size() > kModelPrefix.size())
    return KnownRoute{"GET", kModelPrefix, Work::Model};
  return std::nullopt;
}

// Compares in time independent of where the strings differ.
bool same_secret(std::string_view given, std::string_view expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  return diff == 0;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool origin_allowed(const ServerOptions& options, std::string_view origin) {
  return std::any_of(options.cors_origins.begin(), options.cors_origins.end(),
                     [origin](const std::string& o) { return o == "*" || o == origin; });
}

}  // namespace

bool runs_on_worker(Work work) {
  return work == Work::Tokenize || work == Work::Detokenize || work == Work::Embeddings || work == Work::ChatCompletions ||
         work == Work::Completions;
}

std::string target_path(std::string_view target) {
  // Absolute form (a request meant for a proxy): its path.
  if (const auto scheme = target.find("://"); !target.starts_with('/') && scheme != std::string_view::npos) {
    const auto slash = target.find('/', scheme + 3);
    target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
  }
  if (!target.starts_with('/')) return {};
  target = target.substr(0, target.find_first_of("?#"));
  std::string path;
  path.reserve(target.size());
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] == '%' && i + 2 < target.size()) {
      const int hi = hex_digit(target[i + 1]), lo = hex_digit(target[i + 2]);
      if (hi >= 0 && lo >= 0) {
        path += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    path += target[i];
  }
  return path;
}

std::string route_label(std::string_view target) {
  const std::string path = target_path(target);
  const auto known = known_route(path);
  if (!known) return "other";
  return known->work == Work::Model ? "/v1/models/:id" : std::string(known->path);
}

std::variant<Route, Refusal> route_request(const ServerOptions& options, const RequestHead& head) {
  const std::string path = target_path(head.target);
  const auto known = known_route(path);
  Route route;
  if (known) {
    route.work = known->work;
    route.allow = std::string(known->method);
    if (known->work == Work::Model) route.model_id = path.substr(kModelPrefix.size());
  }
  // A browser's preflight carries no credentials: it is answered before the key check.
  if (known && head.method == "OPTIONS" && head.has_origin && !options.cors_origins.empty()) {
    route.work = Work::Preflight;
    return route;
  }
  const std::string& key = options.api_key;
  if (!key.empty() && path != "/health") {
    if (head.authorization.empty())
      return Refusal{ApiError(401, "You didn't provide an API key: pass it as 'Authorization: Bearer <key>'.",
                              "invalid_request_error", {}, "invalid_api_key"),
                     {}};
    if (!head.authorization.starts_with(kBearer) ||
        !same_secret(head.authorization.substr(kBearer.size()), key))
      return Refusal{ApiError(401, "Incorrect API key provided.", "invalid_request_error", {}, "invalid_api_key"), {}};
  }
  if (!known)
    return Refusal{ApiError(404, "Invalid URL (" + std::string(head.method) + " " + path + ")",
                            "invalid_request_error", {}, "unknown_url"),
                   {}};
  route.head = head.method == "HEAD" && known->method == "GET";
  if (head.method != known->method && !route.head)
    return Refusal{ApiError(405,
                            std::string(head.method) + " is not allowed on " + path + "; use " + route.allow + ".",
                            "invalid_request_error", {}, "method_not_allowed"),
                   {{"Allow", route.allow}}};
  return route;
}

HeaderList cors_headers(const ServerOptions& options, std::string_view origin, const Route* preflight,
                        std::string_view requested_headers) {
  HeaderList h;
  if (origin.empty() || !origin_allowed(options, origin)) return h;
  h.emplace_back("Access-Control-Allow-Origin", std::string(origin));
  h.emplace_back("Vary", "Origin");
  if (preflight) {
    h.emplace_back("Access-Control-Allow-Methods", preflight->allow + ", OPTIONS");
    h.emplace_back("Access-Control-Allow-Headers",
                   requested_headers.empty() ? std::string("Authorization, Content-Type")
                                             : std::string(requested_headers));
    h.emplace_back("Access-Control-Max-Age", std::string(kPreflightMaxAge));
  }
  return h;
}

}  // namespace lamina::serve

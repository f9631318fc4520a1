// The HTTP layer's pure parts: routing, CORS, request framing checks and the
// bytes of responses.
#include <gtest/gtest.h>

#include "http_budget.h"
#include "http_wire.h"
#include "router.h"

namespace lamina::serve {
namespace {

namespace http = boost::beast::http;

ServerOptions keyed() {
  ServerOptions o;
  o.api_key = "sekret";
  return o;
}

RequestHead head(std::string_view method, std::string_view target, std::string_view authorization = {},
                 bool origin = false) {
  return RequestHead{method, target, authorization, origin};
}

int refused_with(const std::variant<Route, Refusal>& r) {
  const auto* refusal = std::get_if<Refusal>(&r);
  return refusal ? refusal->error.status() : 0;
}

TEST(Router, RoutesMethodsAndTheKey) {
  const ServerOptions o = keyed();
  const auto ok = route_request(o, head("POST", "/v1/chat/completions?x=1", "Bearer sekret"));
  ASSERT_TRUE(std::holds_alternative<Route>(ok));
  EXPECT_EQ(std::get<Route>(ok).work, Work::ChatCompletions);
  EXPECT_EQ(refused_with(route_request(o, head("POST", "/v1/completions"))), 401);
  EXPECT_EQ(refused_with(route_request(o, head("POST", "/v1/completions", "Bearer sekreT"))), 401);
  EXPECT_EQ(refused_with(route_request(o, head("GET", "/health"))), 0);
  EXPECT_EQ(refused_with(route_request(o, head("GET", "/nope", "Bearer sekret"))), 404);
  const auto wrong = route_request(o, head("GET", "/v1/completions", "Bearer sekret"));
  ASSERT_EQ(refused_with(wrong), 405);
  EXPECT_EQ(std::get<Refusal>(wrong).headers, (HeaderList{{"Allow", "POST"}}));
  const auto model = route_request(o, head("HEAD", "/v1/models/my%20model", "Bearer sekret"));
  ASSERT_TRUE(std::holds_alternative<Route>(model));
  EXPECT_EQ(std::get<Route>(model).model_id, "my model");
  EXPECT_TRUE(std::get<Route>(model).head);
}

TEST(Router, LabelsAndPaths) {
  EXPECT_EQ(route_label("/v1/models/abc?q"), "/v1/models/:id");
  EXPECT_EQ(route_label("/health"), "/health");
  EXPECT_EQ(route_label("/etc/passwd"), "other");
  EXPECT_EQ(target_path("http://host:1/tokenize?a=%41"), "/tokenize");
  EXPECT_EQ(target_path("/a%2Fb%zz%4"), "/a/b%zz%4");
  EXPECT_EQ(target_path("*"), "");
}

TEST(Router, CorsOnlyForAllowedOrigins) {
  ServerOptions o = keyed();
  EXPECT_EQ(refused_with(route_request(o, head("OPTIONS", "/v1/completions", {}, true))), 401);
  EXPECT_TRUE(cors_headers(o, "http://a.example", nullptr, {}).empty());
  o.cors_origins = {"http://a.example"};
  const auto preflight = route_request(o, head("OPTIONS", "/v1/completions", {}, true));
  ASSERT_TRUE(std::holds_alternative<Route>(preflight));
  const Route& route = std::get<Route>(preflight);
  EXPECT_EQ(route.work, Work::Preflight);
  const HeaderList h = cors_headers(o, "http://a.example", &route, "authorization, x-custom");
  EXPECT_EQ(h.front(), (std::pair<std::string, std::string>{"Access-Control-Allow-Origin", "http://a.example"}));
  EXPECT_NE(std::find(h.begin(), h.end(), std::pair<std::string, std::string>{"Access-Control-Allow-Methods",
                                                                              "POST, OPTIONS"}),
            h.end());
  EXPECT_TRUE(cors_headers(o, "http://b.example", nullptr, {}).empty());
  o.cors_origins = {"*"};
  EXPECT_FALSE(cors_headers(o, "http://b.example", nullptr, {}).empty());
}

RequestHeader request_header(std::initializer_list<std::pair<const char*, const char*>> fields,
                             unsigned version = 11) {
  RequestHeader h;
  h.method(http::verb::post);
  h.target("/v1/completions");
  h.version(version);
  for (const auto& [name, value] : fields) h.insert(name, value);
  return h;
}

int framing_status(const RequestHeader& h) {
  const auto e = check_framing(h);
  return e ? e->status() : 0;
}

TEST(HttpWire, StrictFraming) {
  EXPECT_EQ(framing_status(request_header({{"Host", "x"}, {"Content-Length", "2"}})), 0);
  EXPECT_EQ(framing_status(request_header({{"Content-Length", "2"}})), 400);  // no Host
  EXPECT_EQ(framing_status(request_header({{"Content-Length", "2"}}, 10)), 0);
  EXPECT_EQ(framing_status(request_header({{"Host", "x"}}, 20)), 505);
  EXPECT_EQ(framing_status(request_header({{"Host", "x"}, {"Content-Length", "2"}, {"Content-Length", "2"}})), 400);
  EXPECT_EQ(framing_status(request_header({{"Host", "x"}, {"Transfer-Encoding", "chunked"}})), 0);
  EXPECT_EQ(framing_status(request_header({{"Host", "x"}, {"Transfer-Encoding", "gzip, chunked"}})), 501);
  EXPECT_EQ(framing_status(request_header({{"Host", "x"}, {"Content-Encoding", "gzip"}})), 415);
  EXPECT_EQ(framing_status(request_header({{"Host", "x"}, {"Content-Encoding", "identity"}})), 0);
  EXPECT_EQ(framing_status(request_header({{"Host", "x"}, {"Expect", "100-continue"}})), 0);
  EXPECT_EQ(framing_status(request_header({{"Host", "x"}, {"Expect", "something"}})), 417);
  RequestHeader crowded = request_header({{"Host", "x"}});
  for (std::size_t i = 0; i < kMaxHeaderFields; ++i) crowded.insert("X-A", "b");
  EXPECT_EQ(framing_status(crowded), 431);
}

TEST(HttpWire, ParseFailures) {
  EXPECT_EQ(parse_failure(http::error::body_limit, false, 10)->status(), 413);
  EXPECT_EQ(parse_failure(http::error::header_limit, true, 10)->status(), 431);
  EXPECT_EQ(parse_failure(http::error::buffer_overflow, true, 10)->status(), 431);
  EXPECT_EQ(parse_failure(http::error::bad_chunk, false, 10)->status(), 400);
  EXPECT_EQ(parse_failure(http::error::multiple_content_length, true, 10)->status(), 400);
  EXPECT_FALSE(parse_failure(http::error::end_of_stream, true, 10));
  EXPECT_FALSE(parse_failure(http::error::partial_message, false, 10));
}

TEST(HttpWire, ResponsesFollowTheRequestsVersion) {
  Reply r;
  r.body = "{}";
  r.headers.emplace_back("Retry-After", "1");
  EXPECT_EQ(format_reply(r, 11, true, false, {}),
            "HTTP/1.1 200 OK\r\nServer: lamina-serve\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
            "Content-Length: 2\r\n\r\n{}");
  const std::string closing = format_reply(r, 11, false, true, {});
  EXPECT_NE(closing.find("Connection: close\r\n"), std::string::npos);
  EXPECT_TRUE(closing.ends_with("Content-Length: 2\r\n\r\n"));  // HEAD: the header only
  EXPECT_TRUE(format_reply(r, 10, false, false, {}).starts_with("HTTP/1.0 200 OK\r\n"));
  EXPECT_NE(format_stream_head(11, {}).find("Transfer-Encoding: chunked"), std::string::npos);
  const std::string old = format_stream_head(10, {});
  EXPECT_TRUE(old.starts_with("HTTP/1.0 200 OK\r\n"));
  EXPECT_EQ(old.find("Transfer-Encoding"), std::string::npos);
  EXPECT_EQ(stream_chunk("data: x\n\n", 11), "9\r\ndata: x\n\n\r\n");
  EXPECT_EQ(stream_chunk("data: x\n\n", 10), "data: x\n\n");
  EXPECT_EQ(stream_chunk("", 11), "");
  EXPECT_EQ(stream_end(11), "0\r\n\r\n");
  EXPECT_EQ(stream_end(10), "");
}

TEST(HttpBudget, BodiesHoldMemoryUntilTheirExchangeEnds) {
  BodyBudget budget(100);
  {
    BodyReservation a;
    EXPECT_TRUE(a.reserve(budget, 60));
    BodyReservation b;
    EXPECT_FALSE(b.reserve(budget, 50));
    EXPECT_TRUE(b.reserve(budget, 40));
    a.release();
    EXPECT_TRUE(BodyReservation().reserve(budget, 60));  // given back at once
  }
  BodyReservation all;
  EXPECT_TRUE(all.reserve(budget, 100));
  std::atomic<uint32_t> unsent{0};
  {
    UnsentAnswer u;
    u.hold(unsent);
    EXPECT_EQ(unsent.load(), 1u);
  }
  EXPECT_EQ(unsent.load(), 0u);
}

}  // namespace
}  // namespace lamina::serve

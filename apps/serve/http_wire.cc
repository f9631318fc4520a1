#include "http_wire.h"

#include <cstdio>
#include <iterator>
#include <sstream>

#include <boost/asio/error.hpp>

namespace lamina::serve {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

constexpr std::string_view kServerName = "lamina-serve";

std::string trimmed(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return std::string(s.substr(first, last - first + 1));
}

ApiError header_error(int status, std::string message, std::string code) {
  return ApiError(status, std::move(message), "invalid_request_error", {}, std::move(code));
}

template <class Message>
void add_headers(Message& m, const HeaderList& headers) {
  for (const auto& [name, value] : headers) m.insert(name, value);
}

}  // namespace

std::optional<ApiError> check_framing(const RequestHeader& h) {
  if (h.version() != 10 && h.version() != 11)
    return header_error(505, "Only HTTP/1.0 and HTTP/1.1 are served.", "http_version_not_supported");
  if (static_cast<std::size_t>(std::distance(h.begin(), h.end())) > kMaxHeaderFields)
    return header_error(431, "The request has more than " + std::to_string(kMaxHeaderFields) + " header fields.",
                        "request_header_fields_too_large");
  if (h.version() == 11 && h.find(http::field::host) == h.end())
    return header_error(400, "An HTTP/1.1 request needs a Host header.", "bad_request");
  const auto lengths = h.equal_range(http::field::content_length);
  if (std::distance(lengths.first, lengths.second) > 1)
    return header_error(400, "The request has more than one Content-Length header.", "bad_request");
  const auto codings = h.equal_range(http::field::transfer_encoding);
  const auto n_codings = std::distance(codings.first, codings.second);
  if (n_codings > 1 || (n_codings == 1 && !beast::iequals(trimmed(codings.first->value()), "chunked")))
    return header_error(501, "Only 'Transfer-Encoding: chunked' is supported.", "not_implemented");
  for (const auto& f : h) {
    if (f.name() == http::field::content_encoding && !beast::iequals(trimmed(f.value()), "identity"))
      return header_error(415,
                          "Content-Encoding '" + std::string(f.value()) +
                              "' is not supported: send the body uncompressed.",
                          "unsupported_media_type");
    if (f.name() == http::field::expect && !beast::iequals(trimmed(f.value()), "100-continue"))
      return header_error(417, "Only 'Expect: 100-continue' is supported.", "expectation_failed");
  }
  return std::nullopt;
}

std::optional<ApiError> parse_failure(beast::error_code ec, bool in_header, std::size_t max_body) {
  if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == boost::asio::error::eof ||
      ec == boost::asio::error::connection_reset || ec == boost::asio::error::operation_aborted ||
      ec == boost::asio::error::broken_pipe)
    return std::nullopt;
  if (ec == http::error::body_limit)
    return ApiError(413, "The request body is larger than the limit of " + std::to_string(max_body) + " bytes.",
                    "invalid_request_error", {}, "request_too_large");
  if (ec == http::error::header_limit || (in_header && ec == http::error::buffer_overflow))
    return header_error(431, "The request header is larger than " + std::to_string(kMaxHeaderBytes) + " bytes.",
                        "request_header_fields_too_large");
  return header_error(400, "The HTTP request could not be parsed (" + ec.message() + ").", "bad_request");
}

ApiError request_timeout(bool in_header, int seconds) {
  return header_error(408,
                      std::string("The request ") + (in_header ? "header" : "body") + " did not arrive within " +
                          std::to_string(seconds) + " s.",
                      "request_timeout");
}

std::string format_reply(Reply reply, unsigned version, bool keep_alive, bool head_only, const HeaderList& extra) {
  http::response<http::string_body> res{static_cast<http::status>(reply.status), version};
  res.set(http::field::server, kServerName);
  res.set(http::field::content_type, reply.content_type);
  add_headers(res, reply.headers);
  add_headers(res, extra);
  res.keep_alive(keep_alive);
  res.body() = std::move(reply.body);
  res.prepare_payload();
  std::ostringstream out;
  if (head_only)
    out << res.base();
  else
    out << res;
  return std::move(out).str();
}

std::string format_stream_head(unsigned version, const HeaderList& extra) {
  http::response<http::empty_body> res{http::status::ok, version};
  res.set(http::field::server, kServerName);
  res.set(http::field::content_type, "text/event-stream");
  res.set(http::field::cache_control, "no-cache");
  add_headers(res, extra);
  if (version >= 11)
    res.chunked(true);
  else
    res.keep_alive(false);
  std::ostringstream out;
  out << res.base();
  return std::move(out).str();
}

std::string stream_chunk(std::string_view data, unsigned version) {
  if (version < 11 || data.empty()) return std::string(data);
  char size[24];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out(size, static_cast<std::size_t>(n));
  out += data;
  out += "\r\n";
  return out;
}

std::string stream_end(unsigned version) { return version < 11 ? std::string() : std::string("0\r\n\r\n"); }

}  // namespace lamina::serve

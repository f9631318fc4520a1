// HTTP/1.x on the wire for lamina-serve's connections (Boost.Beast): the
// strict framing checks a request header must pass, what a parse failure
// answers, and the bytes of responses and of streamed ones.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "api_error.h"
#include "beast_http.h"
#include "router.h"
#include "routes.h"

namespace lamina::serve {

// A whole request header (request line and fields) is at most this long,
// and has at most this many fields.
inline constexpr std::size_t kMaxHeaderBytes = 16 * 1024;
inline constexpr std::size_t kMaxHeaderFields = 100;

using RequestHeader = boost::beast::http::request_header<boost::beast::http::fields>;

// Refuses what a proxy in front could frame differently, and what would make
// the server do unbounded work: more than one Content-Length, a
// Transfer-Encoding other than chunked, a compressed body (415), an
// unsupported Expect, HTTP/1.1 without Host, too many fields, versions
// other than 1.0 and 1.1.
std::optional<ApiError> check_framing(const RequestHeader& header);

// The answer to a request Beast could not parse (400, 413, 431), or nullopt
// when the client went away (nothing to answer).
std::optional<ApiError> parse_failure(boost::beast::error_code ec, bool in_header, std::size_t max_body);

// The 408 of a request whose header or body did not arrive in time.
ApiError request_timeout(bool in_header, int seconds);

// A whole response. `version` is the request's (10 or 11); `head_only`
// leaves the body out (HEAD).
std::string format_reply(Reply reply, unsigned version, bool keep_alive, bool head_only, const HeaderList& extra);

// The header of a Server-Sent Events stream: chunked for HTTP/1.1; for
// HTTP/1.0, which has no chunks, the body ends when the connection closes.
std::string format_stream_head(unsigned version, const HeaderList& extra);
// `data` framed as one chunk (HTTP/1.1) or as it is (HTTP/1.0).
std::string stream_chunk(std::string_view data, unsigned version);
// What ends a stream's body.
std::string stream_end(unsigned version);

}  // namespace lamina::serve

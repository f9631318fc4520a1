// What the server notes about the request it is serving, for its error
// body, its metrics and its log line.
//
// cpp-httplib serves one request at a time per worker thread and runs a
// request's routing, handler, streamed body, error handler and logger all on
// that thread; the record is therefore thread-local. (The error handler is the
// one place that writes error bodies: cpp-httplib 0.11 clears the body a
// handler set before it calls the error handler.)
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api_error.h"

namespace lamina::serve {

struct RequestRecord {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::string route = "other";      // the metrics label
  std::optional<ApiError> error;    // why the request failed, when it did
  bool completion = false;          // it ran on the engine
  bool stream = false;
  uint32_t prompt_tokens = 0;
  uint32_t cached_tokens = 0;
  uint32_t generated_tokens = 0;
  std::string finish;               // stop, length, cancelled, error, disconnected
  double first_token_ms = -1.0;
};

// This worker thread's record; reset() at the start of each request.
RequestRecord& current_request();
void reset_current_request();

struct LogLineInput {
  std::string_view method;
  std::string_view path;
  std::string_view remote_addr;
  int remote_port = 0;
  int status = 0;
  double duration_ms = 0.0;
};

// One line (newline-terminated): UTC time, client, method, path, status,
// duration, then for completion requests the tokens and finish reason.
std::string format_log_line(const LogLineInput& in, const RequestRecord& record,
                            std::chrono::system_clock::time_point now);

}  // namespace lamina::serve

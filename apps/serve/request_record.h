// What the server notes about a request it serves, for its metrics and its
// log line. Each exchange on a connection owns one.
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

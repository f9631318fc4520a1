#include "request_record.h"

#include <cstdio>
#include <ctime>

namespace lamina::serve {
namespace {

// Paths are client-chosen: keep control characters out of the log.
std::string printable(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string format_log_line(const LogLineInput& in, const RequestRecord& record,
                            std::chrono::system_clock::time_point now) {
  const auto since_epoch = now.time_since_epoch();
  const std::time_t secs = std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count();
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count() % 1000;
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);

  char head[96];
  std::snprintf(head, sizeof head, "%s.%03dZ ", stamp, static_cast<int>(millis));
  std::string line = head;
  line += printable(in.remote_addr) + ":" + std::to_string(in.remote_port) + " " + printable(in.method) + " " +
          printable(in.path) + " " + std::to_string(in.status);
  char duration[32];
  std::snprintf(duration, sizeof duration, " %.1fms", in.duration_ms);
  line += duration;
  if (record.completion) {
    line += " prompt=" + std::to_string(record.prompt_tokens) + " cached=" + std::to_string(record.cached_tokens) +
            " generated=" + std::to_string(record.generated_tokens);
    if (!record.finish.empty()) line += " finish=" + record.finish;
    if (record.first_token_ms >= 0) {
      char ttft[32];
      std::snprintf(ttft, sizeof ttft, " ttft=%.1fms", record.first_token_ms);
      line += ttft;
    }
    if (record.stream) line += " stream";
  }
  if (record.error) line += " error=\"" + printable(record.error->what()) + "\"";
  line += '\n';
  return line;
}

}  // namespace lamina::serve

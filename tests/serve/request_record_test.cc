// The request log line.
#include <gtest/gtest.h>

#include "request_record.h"

namespace lamina::serve {
namespace {

const auto kNoon = std::chrono::system_clock::time_point(std::chrono::milliseconds(1700000000123));

TEST(RequestLog, PlainRequest) {
  RequestRecord rec;
  LogLineInput in{"GET", "/health", "127.0.0.1", 40000, 200, 0.44};
  EXPECT_EQ(format_log_line(in, rec, kNoon), "2023-11-14T22:13:20.123Z 127.0.0.1:40000 GET /health 200 0.4ms\n");
}

TEST(RequestLog, CompletionRequestWithItsTokens) {
  RequestRecord rec;
  rec.completion = true;
  rec.stream = true;
  rec.prompt_tokens = 12;
  rec.cached_tokens = 4;
  rec.generated_tokens = 30;
  rec.finish = "length";
  rec.first_token_ms = 8.25;
  LogLineInput in{"POST", "/v1/chat/completions", "10.0.0.2", 5555, 200, 123.45};
  EXPECT_EQ(format_log_line(in, rec, kNoon),
            "2023-11-14T22:13:20.123Z 10.0.0.2:5555 POST /v1/chat/completions 200 123.5ms prompt=12 cached=4 "
            "generated=30 finish=length ttft=8.2ms stream\n");
}

TEST(RequestLog, ErrorsAndControlCharactersStayOnOneLine) {
  RequestRecord rec;
  rec.error = ApiError(400, "bad\nvalue");
  LogLineInput in{"POST", "/x\r\ny", "::1", 1, 400, 1.0};
  const std::string line = format_log_line(in, rec, kNoon);
  EXPECT_EQ(line, "2023-11-14T22:13:20.123Z ::1:1 POST /x\\x0d\\x0ay 400 1.0ms error=\"bad\\x0avalue\"\n");
}

}  // namespace
}  // namespace lamina::serve

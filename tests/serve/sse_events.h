// Reading back the Server-Sent Events a response streams, for the tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lamina::serve::sse_testing {

// The JSON documents of a run of Server-Sent Events; "[DONE]" as a string.
inline std::vector<nlohmann::json> events(const std::string& sse) {
  std::vector<nlohmann::json> out;
  std::size_t pos = 0;
  while (pos < sse.size()) {
    EXPECT_EQ(sse.compare(pos, 6, "data: "), 0) << sse.substr(pos);
    const std::size_t end = sse.find("\n\n", pos);
    if (end == std::string::npos) {
      ADD_FAILURE() << "unterminated event: " << sse.substr(pos);
      break;
    }
    const std::string data = sse.substr(pos + 6, end - pos - 6);
    out.push_back(data == "[DONE]" ? nlohmann::json("[DONE]") : nlohmann::json::parse(data));
    pos = end + 2;
  }
  return out;
}

}  // namespace lamina::serve::sse_testing

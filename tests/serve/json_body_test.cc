// Request bodies as JSON: linear time, limits, strictness.
#include <gtest/gtest.h>

#include <string>

#include "api_error.h"
#include "json_body.h"

namespace lamina::serve {
namespace {

// The message a body is refused with (fails the test when it is accepted).
std::string refusal(const std::string& body, const JsonLimits& limits = {}) {
  try {
    parse_json_body(body, limits);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << body.substr(0, 80);
  return {};
}

std::string many(const std::string& item, std::size_t n) {
  std::string out;
  out.reserve(n * (item.size() + 1));
  for (std::size_t i = 0; i < n; ++i) out += (i ? "," : "") + item;
  return out;
}

TEST(JsonBody, BuildsTheDocument) {
  const auto doc = parse_json_body(R"({"a": [1, -2, 3.5, "x", true, null, {"b": {}}], "c": {"d": [[]]}})");
  EXPECT_EQ(doc["a"].size(), 7u);
  EXPECT_EQ(doc["a"][1], -2);
  EXPECT_EQ(doc["a"][3], "x");
  EXPECT_TRUE(doc["a"][6]["b"].is_object());
  EXPECT_TRUE(doc["c"]["d"][0].is_array());
  EXPECT_EQ(doc["a"][0].type(), nlohmann::json::value_t::number_unsigned);
}

// Objects in an array once cost a rescan of the array each (quadratic):
// 400,000 of them took most of a minute, past the test's timeout.
TEST(JsonBody, ManyObjectsInAnArray) {
  JsonLimits roomy;
  roomy.max_containers = roomy.max_values;
  const auto doc = parse_json_body("{\"a\":[" + many("{}", 400'000) + "]}", roomy);
  EXPECT_EQ(doc["a"].size(), 400'000u);
}

TEST(JsonBody, LimitsRefuseBeforeTheDocumentGrows) {
  JsonLimits small;
  small.max_depth = 3;
  small.max_values = 10;
  small.max_containers = 4;
  EXPECT_NE(refusal(R"({"a": [[[]]]})", small).find("deeper than 3"), std::string::npos);
  EXPECT_NO_THROW(parse_json_body(R"({"a": [[]]})", small));
  EXPECT_NE(refusal(R"({"a": [1,2,3,4,5,6,7,8,9,10]})", small).find("more than 10 values"), std::string::npos);
  EXPECT_NE(refusal(R"({"a": [{}, {}, {}, {}]})", small).find("more than 4 objects and arrays"), std::string::npos);
  EXPECT_NE(refusal("{\"a\":[" + many("{}", 70'000) + "]}").find("65536"), std::string::npos);
}

TEST(JsonBody, StrictnessNulTrailingBytesAndRepeatedNames) {
  EXPECT_NE(refusal(std::string("{\"a\": 1}\0garbage", 16)).find("NUL byte (at byte 8)"), std::string::npos);
  EXPECT_NE(refusal(std::string("{\"a\": \"x\0y\"}", 12)).find("NUL"), std::string::npos);
  refusal("{\"a\": 1} {\"b\": 2}");
  EXPECT_NE(refusal(R"({"a": 1, "b": {"c": 1, "c": 2}})").find("'c' more than once"), std::string::npos);
  EXPECT_NO_THROW(parse_json_body(R"({"c": 1, "d": {"c": 2}})"));
  EXPECT_NE(refusal("[1]").find("must be an object"), std::string::npos);
  refusal("{\"a\": \"\xed\xa0\x80\"}");  // a UTF-16 surrogate in UTF-8
}

}  // namespace
}  // namespace lamina::serve

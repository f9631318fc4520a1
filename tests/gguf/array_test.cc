// Arrays store their elements packed; every way of reading them back agrees.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/gguf/value.h"
#include "lamina/gguf/writer.h"

namespace lamina::gguf {
namespace {

TEST(Array, StringsReadBackByIndexAndAsValues) {
  const std::vector<std::string> items = {"", "a", std::string("nul\0in", 6), "\xc4\xa0token", ""};
  const Array a = Array::of(items);
  EXPECT_EQ(a.element_type(), ValueType::String);
  ASSERT_EQ(a.size(), items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(a.string_at(i), items[i]) << i;
    EXPECT_EQ(a.at(i), Value::string(items[i])) << i;
  }
  EXPECT_THROW((void)a.string_at(items.size()), GgufError);
  EXPECT_THROW((void)a.at(items.size()), GgufError);
  EXPECT_THROW((void)a.values<int32_t>(), GgufError);
}

TEST(Array, NumbersAreContiguousOfTheirOwnTypeOnly) {
  const Array a = Array::of(std::vector<int32_t>{-1, 0, 7});
  EXPECT_EQ(a.element_type(), ValueType::Int32);
  const auto v = a.values<int32_t>();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], -1);
  EXPECT_EQ(v[2], 7);
  EXPECT_EQ(a.at(1), Value::i32(0));
  EXPECT_THROW((void)a.values<uint32_t>(), GgufError);
  EXPECT_THROW((void)a.string_at(0), GgufError);
  const Array b = Array::of(std::vector<bool>{true, false});
  EXPECT_EQ(b.element_type(), ValueType::Bool);
  EXPECT_EQ(b.at(0), Value::boolean(true));
  EXPECT_EQ(b.at(1), Value::boolean(false));
}

TEST(Array, FromValuesChecksEveryElement) {
  const Array a = Array::from_values(ValueType::UInt16, {Value::u16(3), Value::u16(9)});
  EXPECT_EQ(a, Array::of(std::vector<uint16_t>{3, 9}));
  try {
    (void)Array::from_values(ValueType::Float32, {Value::f32(1), Value::f64(2)});
    FAIL() << "a float64 was accepted into a float32 array";
  } catch (const GgufError& e) {
    EXPECT_NE(std::string(e.what()).find("array of float32 holds a float64 at index 1"), std::string::npos)
        << e.what();
  }
  const Array nested = Array::from_values(ValueType::Array, {Value::string_array({"x"})});
  EXPECT_EQ(nested.element_type(), ValueType::Array);
  EXPECT_EQ(nested.at(0).as_array().string_at(0), "x");
}

TEST(Array, EqualityIsExactAndBitwiseForFloats) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(Array::of(std::vector<float>{nan, 1.0f}), Array::of(std::vector<float>{nan, 1.0f}));
  EXPECT_NE(Array::of(std::vector<float>{0.0f}), Array::of(std::vector<float>{-0.0f}));
  EXPECT_NE(Array::of(std::vector<int32_t>{1}), Array::of(std::vector<uint32_t>{1}));
  EXPECT_NE(Array::of(std::vector<std::string>{"ab", "c"}), Array::of(std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(Array(), Array::of(std::vector<uint8_t>{}));
}

TEST(Array, WrittenAndParsedBackUnchanged) {
  const std::vector<std::pair<std::string, Value>> pairs = {
      {"s", Value::string_array({"alpha", "", "gamma"})},
      {"f", Value::f32_array({1.5f, -2.0f})},
      {"b", Value::array(Array::of(std::vector<bool>{false, true}))},
      {"u64", Value::array(Array::of(std::vector<uint64_t>{~uint64_t{0}}))},
      {"nested", Value::array(Array::from_values(ValueType::Array, {Value::i32_array({4, 5})}))},
  };
  GgufWriter w;
  for (const auto& [key, value] : pairs) w.set(key, value);
  const auto bytes = w.to_bytes();
  const GgufFile f = GgufFile::parse(bytes);
  EXPECT_EQ(f.get_string_array("s"), (std::vector<std::string>{"alpha", "", "gamma"}));
  EXPECT_EQ(f.get_f32_array("f"), (std::vector<float>{1.5f, -2.0f}));
  for (const auto& [key, value] : pairs) EXPECT_EQ(f.at(key), value) << key;
}

}  // namespace
}  // namespace lamina::gguf

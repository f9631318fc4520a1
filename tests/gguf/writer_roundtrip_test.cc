// GgufWriter -> GgufFile round trips: every value type, every tensor type,
// several alignments, and a re-write of every real test data file.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gguf_layout.h"
#include "lamina/gguf/file.h"
#include "lamina/gguf/writer.h"
#include "test_support.h"

namespace lamina::gguf {
namespace {

using KeyValues = std::vector<std::pair<std::string, Value>>;

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

Value array_of(ValueType element, std::vector<Value> items) {
  return Value::array(Array::from_values(element, items));
}

// Metadata covering all 13 value types, their extremes, NaNs with payloads,
// strings with NUL and multi-byte UTF-8, and arrays of every shape.
KeyValues sample_metadata() {
  const float nan_f = std::bit_cast<float>(uint32_t{0x7FC12345});
  const double nan_d = std::bit_cast<double>(uint64_t{0xFFF8000000ABCDEF});
  KeyValues kv = {
      {"t.u8", Value::u8(255)},
      {"t.i8", Value::i8(-128)},
      {"t.u16", Value::u16(65535)},
      {"t.i16", Value::i16(-32768)},
      {"t.u32", Value::u32(0xFFFFFFFFu)},
      {"t.i32", Value::i32(std::numeric_limits<int32_t>::min())},
      {"t.f32", Value::f32(3.25f)},
      {"t.f32.nan", Value::f32(nan_f)},
      {"t.f32.neg_zero", Value::f32(-0.0f)},
      {"t.f32.inf", Value::f32(-std::numeric_limits<float>::infinity())},
      {"t.f32.denormal", Value::f32(std::numeric_limits<float>::denorm_min())},
      {"t.bool.true", Value::boolean(true)},
      {"t.bool.false", Value::boolean(false)},
      {"t.string", Value::string("h\xC3\xA9llo \xE2\x96\x81 \xF0\x9F\x99\x82")},
      {"t.string.empty", Value::string("")},
      {"t.string.nul", Value::string(std::string("a\0b", 3))},
      {"t.u64", Value::u64(std::numeric_limits<uint64_t>::max())},
      {"t.i64", Value::i64(std::numeric_limits<int64_t>::min())},
      {"t.f64", Value::f64(-1.0e300)},
      {"t.f64.nan", Value::f64(nan_d)},
      {"t.arr.string", Value::string_array({"a", "", "\xC3\xBC", std::string(300, 'x')})},
      {"t.arr.f32", Value::f32_array({1.5f, nan_f, -0.0f})},
      {"t.arr.i32", Value::i32_array({-1, 0, 7})},
      {"t.arr.u8", array_of(ValueType::UInt8, {Value::u8(1), Value::u8(2)})},
      {"t.arr.i8", array_of(ValueType::Int8, {Value::i8(-3)})},
      {"t.arr.u16", array_of(ValueType::UInt16, {Value::u16(9)})},
      {"t.arr.i16", array_of(ValueType::Int16, {Value::i16(-9)})},
      {"t.arr.u32", array_of(ValueType::UInt32, {Value::u32(5)})},
      {"t.arr.bool", array_of(ValueType::Bool, {Value::boolean(true), Value::boolean(false)})},
      {"t.arr.u64", array_of(ValueType::UInt64, {Value::u64(1)})},
      {"t.arr.i64", array_of(ValueType::Int64, {Value::i64(-1)})},
      {"t.arr.f64", array_of(ValueType::Float64, {Value::f64(nan_d), Value::f64(0.5)})},
      {"t.arr.empty", array_of(ValueType::Int64, {})},
      {"t.arr.empty_strings", array_of(ValueType::String, {})},
      {"t.arr.empty_arrays", array_of(ValueType::Array, {})},
      {"t.arr.arr",
       array_of(ValueType::Array, {array_of(ValueType::UInt8, {Value::u8(1), Value::u8(2)}),
                                   array_of(ValueType::String, {Value::string("x")}),
                                   array_of(ValueType::Float32, {})})},
      {"t.arr.deep",
       array_of(ValueType::Array,
                {array_of(ValueType::Array,
                          {array_of(ValueType::Array, {Value::string_array({"deep", "er"})})})})},
      // Keys are UTF-8, not just ASCII.
      {"t.\xE2\x96\x81key", Value::u8(0)},
  };
  return kv;
}

struct SampleTensor {
  std::string name;
  TensorType type;
  std::vector<uint64_t> shape;
  std::vector<std::byte> data;
};

// One tensor of every known type, with odd shapes of 1 to 4 dims and random
// bytes of the size the type's block layout gives (computed here, not by libgguf).
std::vector<SampleTensor> sample_tensors(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<SampleTensor> out;
  for (std::size_t i = 0; i < tensor_type_count(); ++i) {
    const auto& traits = tensor_type_at(i);
    const uint64_t odd[] = {1, 3, 5, 7};
    const std::size_t n_dims = 1 + i % 4;
    std::vector<uint64_t> shape{traits.block_size * odd[(i + 1) % 4]};
    for (std::size_t d = 1; d < n_dims; ++d) shape.push_back(odd[(i + d) % 4]);
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    std::vector<std::byte> data(n / traits.block_size * traits.type_size);
    for (auto& b : data) b = static_cast<std::byte>(rng());
    out.push_back({"tensor." + std::string(traits.name), traits.type, shape, std::move(data)});
  }
  return out;
}

void expect_same_metadata(const GgufFile& f, const KeyValues& want) {
  ASSERT_EQ(f.metadata().size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(f.metadata()[i].key, want[i].first);
    EXPECT_TRUE(f.metadata()[i].value == want[i].second)
        << want[i].first << ": " << to_display_string(f.metadata()[i].value) << " vs "
        << to_display_string(want[i].second);
  }
}

void expect_same_tensors(const GgufFile& f, const std::vector<SampleTensor>& want) {
  ASSERT_EQ(f.tensors().size(), want.size());
  uint64_t expected_offset = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const auto& t = f.tensors()[i];
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(t.name, want[i].name);
    EXPECT_EQ(t.type, want[i].type);
    EXPECT_EQ(std::vector<uint64_t>(t.shape().begin(), t.shape().end()), want[i].shape);
    // ggml's layout: data in info order, each tensor starting at the next aligned offset.
    EXPECT_EQ(t.offset, expected_offset);
    EXPECT_EQ(t.offset % f.alignment(), 0u);
    EXPECT_EQ((f.data_offset() + t.offset) % f.alignment(), 0u);
    ASSERT_EQ(t.data.size(), want[i].data.size());
    EXPECT_TRUE(std::equal(t.data.begin(), t.data.end(), want[i].data.begin()));
    expected_offset = align_up(t.offset + t.n_bytes, f.alignment());
  }
  EXPECT_EQ(f.file_size(), f.data_offset() + expected_offset);
}

class WriterRoundTrip : public ::testing::TestWithParam<uint32_t> {};

TEST_P(WriterRoundTrip, AllValueTypesAndAllTensorTypes) {
  const uint32_t alignment = GetParam();
  GgufWriter w(alignment);
  KeyValues want;
  if (alignment != kDefaultAlignment) want.emplace_back("general.alignment", Value::u32(alignment));
  for (auto& [k, v] : sample_metadata()) {
    w.set(k, v);
    want.emplace_back(k, v);
  }
  const auto tensors = sample_tensors(alignment);
  for (const auto& t : tensors) w.add_tensor(t.name, t.type, t.shape, t.data);

  const auto bytes = w.to_bytes();
  const GgufFile parsed = GgufFile::parse(bytes);
  EXPECT_EQ(parsed.version(), 3u);
  EXPECT_EQ(parsed.alignment(), alignment);
  EXPECT_EQ(parsed.data_offset() % alignment, 0u);
  expect_same_metadata(parsed, want);
  expect_same_tensors(parsed, tensors);

  // The NaN payloads survive bit for bit, not just "some NaN".
  EXPECT_EQ(std::bit_cast<uint32_t>(parsed.get_f32("t.f32.nan")), 0x7FC12345u);
  EXPECT_EQ(std::bit_cast<uint64_t>(parsed.get_f64("t.f64.nan")), 0xFFF8000000ABCDEFu);
  EXPECT_TRUE(std::signbit(parsed.get_f32("t.f32.neg_zero")));
  EXPECT_EQ(parsed.get_string("t.string.nul").size(), 3u);

  // The file path: same bytes, read through the mapping.
  const auto dir = testing::make_temp_dir("gguf_writer");
  const auto path = dir / ("all_types_" + std::to_string(alignment) + ".gguf");
  w.write_file(path);
  const GgufFile opened = GgufFile::open(path);
  ASSERT_EQ(opened.file_size(), bytes.size());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), opened.bytes().begin()));
  expect_same_metadata(opened, want);
  expect_same_tensors(opened, tensors);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Alignments, WriterRoundTrip, ::testing::Values(1u, 32u, 64u, 4096u));

TEST(Writer, EmptyFileAndMetadataOnly) {
  GgufWriter empty;
  const auto bytes = empty.to_bytes();
  const GgufFile f = GgufFile::parse(bytes);
  EXPECT_TRUE(f.metadata().empty());
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.architecture(), "");

  GgufWriter meta;
  meta.set("general.architecture", Value::string("llama"));
  const auto meta_bytes = meta.to_bytes();
  const GgufFile g = GgufFile::parse(meta_bytes);
  EXPECT_EQ(g.architecture(), "llama");
}

TEST(Writer, SetReplacesInPlaceAndRemoveWorks) {
  GgufWriter w;
  w.set("a", Value::u32(1));
  w.set("b", Value::string("x"));
  w.set("c", Value::u8(3));
  w.set("a", Value::string("replaced"));  // keeps the first position, takes the new type
  EXPECT_TRUE(w.remove("b"));
  EXPECT_FALSE(w.remove("b"));
  w.set("general.alignment", Value::u32(128));
  const auto bytes = w.to_bytes();
  const GgufFile f = GgufFile::parse(bytes);
  ASSERT_EQ(f.metadata().size(), 3u);
  EXPECT_EQ(f.metadata()[0].key, "a");
  EXPECT_EQ(f.get_string("a"), "replaced");
  EXPECT_EQ(f.metadata()[1].key, "c");
  EXPECT_EQ(f.alignment(), 128u);
  EXPECT_EQ(f.data_offset() % 128, 0u);
  EXPECT_TRUE(w.remove("general.alignment"));
  EXPECT_EQ(GgufFile::parse(w.to_bytes()).alignment(), kDefaultAlignment);
}

TEST(Writer, RejectsInvalidInput) {
  auto expect_error = [](auto&& call, const std::string& what) {
    try {
      call();
      ADD_FAILURE() << "no error, expected: " << what;
    } catch (const GgufError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error([] { GgufWriter w(0); }, "power of two");
  expect_error([] { GgufWriter w(48); }, "power of two");
  GgufWriter w;
  expect_error([&] { w.set("general.alignment", Value::u64(64)); }, "uint32");
  expect_error([&] { w.set("general.alignment", Value::u32(3)); }, "power of two");
  expect_error([&] { w.set("", Value::u8(0)); }, "empty");

  const std::vector<std::byte> four(4);
  const uint64_t one[] = {1};
  w.add_tensor("t", TensorType::F32, one, four);
  expect_error([&] { w.add_tensor("t", TensorType::F32, one, four); }, "duplicate tensor name 't'");
  expect_error([&] { w.add_tensor("", TensorType::F32, one, four); }, "empty tensor name");
  const uint64_t two[] = {2};
  expect_error([&] { w.add_tensor("u", TensorType::F32, two, four); }, "need 8");
  const uint64_t thirty_three[] = {33};
  expect_error([&] { w.add_tensor("u", TensorType::Q8_0, thirty_three, four); }, "block size");
  expect_error([&] { w.add_tensor("u", TensorType::F32, {}, four); }, "n_dims 0");
  const uint64_t five_dims[] = {1, 1, 1, 1, 1};
  expect_error([&] { w.add_tensor("u", TensorType::F32, five_dims, four); }, "n_dims 5");
  expect_error([&] { w.add_tensor("u", static_cast<TensorType>(4), one, four); }, "unknown");

  // An array cannot hold an item of another type than its element type.
  expect_error([&] { (void)array_of(ValueType::UInt8, {Value::u8(1), Value::string("x")}); },
               "array of uint8 holds a string at index 1");

  // A failed write_file leaves nothing behind, also when it fails halfway.
  GgufWriter deferred;
  deferred.set("x", Value::u8(1));
  deferred.add_tensor_deferred("u", TensorType::F32, one);
  const auto failing_fill = [](std::size_t, std::span<std::byte>) { throw GgufError("no data for u"); };
  const auto dir = testing::make_temp_dir("gguf_writer_fail");
  expect_error([&] { GgufWriter().write_file(dir / "missing" / "x.gguf"); }, "cannot create");
  expect_error([&] { deferred.write_file(dir / "bad.gguf", failing_fill); }, "no data for u");
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

// True when the file is laid out the way ggml writes it: tensor data in info
// order, each at the next aligned offset, and the file ends at the aligned end
// of the last tensor.
bool has_ggml_layout(const GgufFile& f) {
  uint64_t next = 0;
  for (const auto& t : f.tensors()) {
    if (t.offset != next) return false;
    next = align_up(t.offset + t.n_bytes, f.alignment());
  }
  return f.file_size() == f.data_offset() + next;
}

TEST(Writer, RewritesEveryTestdataFile) {
  LAMINA_REQUIRE_TESTDATA();
  const auto files = testing::all_testdata_gguf_files();
  ASSERT_GT(files.size(), 60u);
  std::size_t identical = 0, metadata_only = 0;
  for (const auto& path : files) {
    SCOPED_TRACE(path.string());
    const GgufFile original = GgufFile::open(path);
    GgufWriter w;
    w.copy_metadata_from(original);
    for (const auto& t : original.tensors()) w.add_tensor_view(t.name, t.type, t.shape(), t.data);
    const auto bytes = w.to_bytes();
    const GgufFile copy = GgufFile::parse(bytes);

    ASSERT_EQ(copy.metadata().size(), original.metadata().size());
    for (std::size_t i = 0; i < copy.metadata().size(); ++i) {
      EXPECT_EQ(copy.metadata()[i].key, original.metadata()[i].key);
      EXPECT_TRUE(copy.metadata()[i].value == original.metadata()[i].value)
          << original.metadata()[i].key;
    }
    ASSERT_EQ(copy.tensors().size(), original.tensors().size());
    for (std::size_t i = 0; i < copy.tensors().size(); ++i) {
      const auto& a = copy.tensors()[i];
      const auto& b = original.tensors()[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.type, b.type);
      EXPECT_EQ(a.ne, b.ne);
      EXPECT_TRUE(std::equal(a.data.begin(), a.data.end(), b.data.begin(), b.data.end())) << a.name;
    }

    const auto orig = original.bytes();
    if (original.tensors().empty()) {
      // The vocab files stop right after the metadata; the writer pads the
      // (empty) data section to the alignment, so the original is a prefix.
      ++metadata_only;
      ASSERT_EQ(bytes.size(), align_up(orig.size(), original.alignment()));
      EXPECT_TRUE(std::equal(orig.begin(), orig.end(), bytes.begin()));
      EXPECT_TRUE(std::all_of(bytes.begin() + static_cast<std::ptrdiff_t>(orig.size()), bytes.end(),
                              [](std::byte b) { return b == std::byte{0}; }));
    } else {
      ASSERT_TRUE(has_ggml_layout(original));
      EXPECT_TRUE(std::equal(orig.begin(), orig.end(), bytes.begin(), bytes.end()))
          << "re-written file differs from the original";
      ++identical;
    }
  }
  EXPECT_EQ(identical + metadata_only, files.size());
}

}  // namespace
}  // namespace lamina::gguf

// GgufWriter's deferred tensors: bytes produced by a filler while the file is
// written must give the very file that tensors added up front give.
#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/gguf/writer.h"
#include "test_support.h"

namespace lamina::gguf {
namespace {

struct SampleTensor {
  std::string name;
  TensorType type;
  std::vector<uint64_t> shape;
  std::vector<std::byte> bytes;
};

// Tensors of several types and sizes (sizes not multiples of the alignment),
// each filled with its own byte pattern.
std::vector<SampleTensor> sample_tensors() {
  std::vector<SampleTensor> tensors = {
      {"a.weight", TensorType::F32, {7, 3}, {}},
      {"b.weight", TensorType::Q8_0, {64, 5}, {}},
      {"c.bias", TensorType::F16, {9}, {}},
      {"d.weight", TensorType::Q4_K, {256, 2, 3}, {}},
      {"e.weight", TensorType::BF16, {5, 1, 1, 2}, {}},
  };
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    auto& t = tensors[i];
    t.bytes.resize(tensor_byte_size(t.type, t.shape));
    for (std::size_t j = 0; j < t.bytes.size(); ++j)
      t.bytes[j] = static_cast<std::byte>((j * 31 + i * 7 + 1) & 0xFF);
  }
  return tensors;
}

GgufWriter writer_with_metadata(uint32_t alignment) {
  GgufWriter w(alignment);
  w.set("general.architecture", Value::string("test"));
  w.set("test.count", Value::u32(3));
  return w;
}

class WriterStream : public ::testing::TestWithParam<uint32_t> {};

TEST_P(WriterStream, DeferredTensorsGiveTheSameFileAsTensorsAddedUpFront) {
  const auto tensors = sample_tensors();
  GgufWriter eager = writer_with_metadata(GetParam());
  GgufWriter streamed = writer_with_metadata(GetParam());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    eager.add_tensor(t.name, t.type, t.shape, t.bytes);
    // Every other tensor deferred, so both kinds mix in one file.
    if (i % 2 == 0) {
      streamed.add_tensor_deferred(t.name, t.type, t.shape);
    } else {
      streamed.add_tensor_view(t.name, t.type, t.shape, t.bytes);
    }
  }
  std::vector<std::size_t> calls;
  const auto fill = [&](std::size_t index, std::span<std::byte> out) {
    calls.push_back(index);
    ASSERT_LT(index, tensors.size());
    ASSERT_EQ(out.size(), tensors[index].bytes.size()) << tensors[index].name;
    std::copy(tensors[index].bytes.begin(), tensors[index].bytes.end(), out.begin());
  };
  const std::vector<std::byte> expected = eager.to_bytes();
  EXPECT_EQ(streamed.to_bytes(fill), expected);
  EXPECT_EQ(calls, (std::vector<std::size_t>{0, 2, 4}));

  const GgufFile file = GgufFile::parse(expected);
  ASSERT_EQ(file.tensors().size(), tensors.size());
  for (const auto& t : tensors) {
    const auto& info = file.tensor(t.name);
    EXPECT_EQ(info.type, t.type) << t.name;
    EXPECT_TRUE(std::equal(info.data.begin(), info.data.end(), t.bytes.begin(), t.bytes.end()))
        << t.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Alignments, WriterStream, ::testing::Values(32u, 1u, 64u));

TEST(WriterStreamErrors, DeferredTensorWithoutFillerIsRejectedBeforeAnyOutput) {
  GgufWriter w;
  const std::vector<uint64_t> shape{4};
  w.add_tensor_deferred("x", TensorType::F32, shape);
  std::ostringstream out;
  EXPECT_THROW(w.write(out), GgufError);
  EXPECT_TRUE(out.str().empty());
}

TEST(WriterStreamErrors, DeferredTensorIsCheckedLikeAnyOther) {
  GgufWriter w;
  const std::vector<uint64_t> bad_row{100, 2};  // not a multiple of Q8_0's 32
  EXPECT_THROW(w.add_tensor_deferred("x", TensorType::Q8_0, bad_row), GgufError);
  const std::vector<uint64_t> shape{4};
  w.add_tensor_deferred("y", TensorType::F32, shape);
  EXPECT_THROW(w.add_tensor_deferred("y", TensorType::F32, shape), GgufError);
}

class WriterStreamFiles : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::make_temp_dir("writer_stream"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(WriterStreamFiles, FillerExceptionLeavesNoFileBehind) {
  GgufWriter w = writer_with_metadata(32);
  const std::vector<uint64_t> shape{64, 4};
  w.add_tensor_deferred("first", TensorType::F32, shape);
  w.add_tensor_deferred("second", TensorType::F32, shape);
  const auto path = dir_ / "out.gguf";
  const auto fill = [](std::size_t index, std::span<std::byte> out) {
    if (index == 1) throw std::runtime_error("producer failed");
    std::fill(out.begin(), out.end(), std::byte{1});
  };
  EXPECT_THROW(w.write_file(path, fill), std::runtime_error);
  EXPECT_TRUE(std::filesystem::is_empty(dir_)) << "a temporary or partial file was left";
}

TEST_F(WriterStreamFiles, WriteFileStreamsEachTensorAndRenamesIntoPlace) {
  const auto tensors = sample_tensors();
  GgufWriter w = writer_with_metadata(32);
  for (const auto& t : tensors) w.add_tensor_deferred(t.name, t.type, t.shape);
  const auto path = dir_ / "out.gguf";
  w.write_file(path, [&](std::size_t index, std::span<std::byte> out) {
    std::copy(tensors[index].bytes.begin(), tensors[index].bytes.end(), out.begin());
  });
  const GgufFile file = GgufFile::open(path);
  EXPECT_EQ(file.get_u32("test.count"), 3u);
  for (const auto& t : tensors) {
    const auto& info = file.tensor(t.name);
    EXPECT_TRUE(std::equal(info.data.begin(), info.data.end(), t.bytes.begin(), t.bytes.end()))
        << t.name;
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_),
                          std::filesystem::directory_iterator()),
            1);
}

}  // namespace
}  // namespace lamina::gguf

// lamina-inspect --tensor NAME --dump-f32 OUT: every format libquant knows comes out
// as the reference dequantizer's f32 values; bad requests fail cleanly.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/gguf/writer.h"
#include "lamina/quant/format.h"
#include "lamina/quant/reference.h"
#include "tool_runner.h"

namespace lamina::apps_test {
namespace {

using quant::QuantFormat;

const std::string kInspect = LAMINA_INSPECT_EXE;

constexpr uint64_t kRowLength = 512;
constexpr uint64_t kRows = 3;

std::string tensor_name(QuantFormat f) {
  return "t." + std::string(quant::format_traits(f).name);
}

class InspectDump : public ::testing::Test {
 protected:
  // One tensor per format (the activation-only Q8_1 and Q8_K too), quantized
  // from the same random values,
  // plus an I32 tensor no dequantizer handles.
  static void SetUpTestSuite() {
    dir_ = new ScratchDir("inspect_dump");
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(kRowLength * kRows);
    for (float& v : values) v = normal(rng);
    gguf::GgufWriter w;
    const std::vector<uint64_t> shape{kRowLength, kRows};
    for (QuantFormat f : quant::kAllFormats) {
      const uint64_t stride = quant::row_bytes(f, kRowLength);
      std::vector<std::byte> bytes(stride * kRows);
      for (uint64_t r = 0; r < kRows; ++r)
        quant::quantize_row_ref(f, values.data() + r * kRowLength, bytes.data() + r * stride,
                                kRowLength);
      w.add_tensor(tensor_name(f), static_cast<gguf::TensorType>(f), shape, bytes);
    }
    const std::vector<std::byte> ints(4 * 8);
    const std::vector<uint64_t> int_shape{8};
    w.add_tensor("t.ints", gguf::TensorType::I32, int_shape, ints);
    w.write_file(model());
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::filesystem::path model() { return *dir_ / "model.gguf"; }

  static ScratchDir* dir_;
};

ScratchDir* InspectDump::dir_ = nullptr;

TEST_F(InspectDump, EveryFormatDumpsItsDequantizedValues) {
  const gguf::GgufFile file = gguf::GgufFile::open(model());
  std::size_t checked = 0;
  for (QuantFormat f : quant::kAllFormats) {
    SCOPED_TRACE(tensor_name(f));
    const auto out = *dir_ / (tensor_name(f) + ".f32");
    const ToolResult r =
        run_tool(kInspect, {model().string(), "--tensor", tensor_name(f), "--dump-f32", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;

    const gguf::TensorInfo& t = file.tensor(tensor_name(f));
    std::vector<float> expected(kRowLength * kRows);
    for (uint64_t row = 0; row < kRows; ++row)
      quant::dequantize_row_ref(f, t.data.data() + row * t.row_bytes(),
                                expected.data() + row * kRowLength, kRowLength);
    const std::vector<std::byte> dumped = read_file_bytes(out);
    ASSERT_EQ(dumped.size(), expected.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(dumped.data(), expected.data(), dumped.size()), 0);
    ++checked;
  }
  EXPECT_EQ(checked, quant::kAllFormats.size());
  EXPECT_GE(checked, 17u);  // the 15 weight formats, Q8_1 and Q8_K
}

TEST_F(InspectDump, UnknownTensorAndUndequantizableTypeFail) {
  const auto out = *dir_ / "bad.f32";
  ToolResult r = run_tool(kInspect, {model().string(), "--tensor", "nope", "--dump-f32", out.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("no tensor named 'nope'"), std::string::npos) << r.output;
  r = run_tool(kInspect, {model().string(), "--tensor", "t.ints", "--dump-f32", out.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("stored as I32"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(InspectDump, TensorAndDumpGoTogether) {
  const ToolResult r = run_tool(kInspect, {model().string(), "--tensor", "t.F32"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--dump-f32"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace lamina::apps_test

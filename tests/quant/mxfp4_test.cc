// MXFP4 (GGUF type 39): the E8M0 scale, the E2M1 code table and nibble order,
// checked against llama.cpp's own MXFP4 tensors (archs/gptoss.mxfp4_moe.gguf,
// quantized by llama-quantize from the f32 tensors of archs/gptoss.f32.gguf).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/quant/blocks.h"
#include "lamina/quant/format.h"
#include "lamina/quant/half.h"
#include "lamina/quant/reference.h"
#include "quant_testdata.h"

namespace lamina::quant {
namespace {

TEST(Mxfp4, E8M0HalfScaleIsExactForEveryByte) {
  for (int e = 0; e < 256; ++e) {
    EXPECT_EQ(e8m0_to_f32_half(static_cast<uint8_t>(e)), std::ldexp(1.0f, e - 128)) << e;
  }
}

TEST(Mxfp4, TraitsAndLayout) {
  EXPECT_EQ(static_cast<uint32_t>(QuantFormat::MXFP4), 39u);
  EXPECT_EQ(format_from_name("mxfp4"), QuantFormat::MXFP4);
  EXPECT_EQ(format_traits(QuantFormat::MXFP4).block_elems, 32u);
  EXPECT_EQ(format_traits(QuantFormat::MXFP4).block_bytes, 17u);
  EXPECT_EQ(format_traits(QuantFormat::MXFP4).activation, QuantFormat::Q8_0);
}

// A block whose values are all representable comes back unchanged: every
// code at two exponents, with value j in the low nibble of byte j.
TEST(Mxfp4, RepresentableValuesRoundTrip) {
  for (int e : {100, 127, 140}) {
    std::vector<float> x(kQK);
    const float d = std::ldexp(1.0f, e - 128);
    for (int j = 0; j < kQK; ++j) x[j] = d * static_cast<float>(kMXFP4Values[(j * 7 + 3) % 16]);
    x[5] = 12.0f * d;  // the largest magnitude fixes the exponent at e
    BlockMXFP4 b{};
    quantize_row_ref(QuantFormat::MXFP4, x.data(), &b, kQK);
    EXPECT_EQ(b.e, e);
    std::vector<float> y(kQK);
    dequantize_row_ref(QuantFormat::MXFP4, &b, y.data(), kQK);
    for (int j = 0; j < kQK; ++j) EXPECT_EQ(y[j], x[j]) << j;
    EXPECT_EQ(b.qs[5] & 0xF, 7);
  }
}

// Extremes stay defined: infinities take the largest exponent, subnormal
// inputs the smallest, and nothing is read past the block.
TEST(Mxfp4, ExtremeInputsGiveBoundedExponents) {
  std::vector<float> x(kQK, 0.0f);
  BlockMXFP4 b{};
  x[3] = INFINITY;
  quantize_row_ref(QuantFormat::MXFP4, x.data(), &b, kQK);
  EXPECT_EQ(b.e, 254);
  x[3] = 1e-44f;
  quantize_row_ref(QuantFormat::MXFP4, x.data(), &b, kQK);
  EXPECT_EQ(b.e, 0);
}

// llama-quantize wrote these MXFP4 experts from the f32 file's: our reference
// quantizer reproduces its bytes, and its dequantized values lie within half
// a code step (the largest step being 4 * 2^(e-128)) of the f32 weights.
TEST(Mxfp4, MatchesLlamaCppTensors) {
  const auto dir = std::filesystem::path(LAMINA_TESTDATA_DIR) / "archs";
  if (!std::filesystem::exists(dir / "gptoss.mxfp4_moe.gguf")) GTEST_SKIP() << "no archs test data";
  const gguf::GgufFile q = gguf::GgufFile::open(dir / "gptoss.mxfp4_moe.gguf");
  const gguf::GgufFile f = gguf::GgufFile::open(dir / "gptoss.f32.gguf");
  size_t tensors = 0;
  for (const auto& t : q.tensors()) {
    if (static_cast<uint32_t>(t.type) != 39u) continue;
    ++tensors;
    SCOPED_TRACE(t.name);
    const std::vector<float> src = testing::tensor_as_f32(f.tensor(t.name));
    ASSERT_EQ(row_bytes(QuantFormat::MXFP4, src.size()), t.data.size());
    std::vector<std::byte> ours(t.data.size());
    quantize_row_ref(QuantFormat::MXFP4, src.data(), ours.data(), src.size());
    EXPECT_EQ(std::memcmp(ours.data(), t.data.data(), ours.size()), 0);
    std::vector<float> deq(src.size());
    dequantize_row_ref(QuantFormat::MXFP4, t.data.data(), deq.data(), src.size());
    const auto* blocks = reinterpret_cast<const BlockMXFP4*>(t.data.data());
    for (size_t i = 0; i < src.size(); ++i) {
      const float step = 4.0f * e8m0_to_f32_half(blocks[i / kQK].e);
      // Values past E2M1's largest (6 * 2 * d) saturate; the rest round.
      const float limit = std::fabs(src[i]) > 12.0f * step / 4 ? std::fabs(src[i]) - 12.0f * step / 4 : step / 2;
      ASSERT_LE(std::fabs(deq[i] - src[i]), limit) << i;
    }
  }
  EXPECT_EQ(tensors, 6u);
}

}  // namespace
}  // namespace lamina::quant

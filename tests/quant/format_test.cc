// Format ids, names, block geometry and activation pairing.
#include <gtest/gtest.h>

#include <stdexcept>

#include "lamina/gguf/types.h"
#include "lamina/quant/blocks.h"
#include "lamina/quant/format.h"

namespace lamina::quant {
namespace {

TEST(Format, IdsAreGgmlTypeIds) {
  EXPECT_EQ(static_cast<uint32_t>(QuantFormat::F32), 0u);
  EXPECT_EQ(static_cast<uint32_t>(QuantFormat::Q4_0), 2u);
  EXPECT_EQ(static_cast<uint32_t>(QuantFormat::Q8_K), 15u);
  EXPECT_EQ(static_cast<uint32_t>(QuantFormat::IQ4_NL), 20u);
  EXPECT_EQ(static_cast<uint32_t>(QuantFormat::IQ4_XS), 23u);
  EXPECT_EQ(static_cast<uint32_t>(QuantFormat::BF16), 30u);
}

// libgguf keeps its own table of the same facts; the two must agree.
TEST(Format, TraitsAgreeWithGgufTypeTable) {
  for (QuantFormat f : kAllFormats) {
    const FormatTraits& t = format_traits(f);
    EXPECT_EQ(t.format, f);
    const auto* g = gguf::tensor_type_traits(static_cast<uint32_t>(f));
    ASSERT_NE(g, nullptr) << t.name;
    EXPECT_EQ(g->name, t.name);
    EXPECT_EQ(g->block_size, t.block_elems) << t.name;
    EXPECT_EQ(g->type_size, t.block_bytes) << t.name;
  }
}

TEST(Format, BlockSizesMatchStructs) {
  EXPECT_EQ(format_traits(QuantFormat::Q4_K).block_bytes, sizeof(BlockQ4_K));
  EXPECT_EQ(format_traits(QuantFormat::Q8_K).block_bytes, sizeof(BlockQ8_K));
  EXPECT_EQ(format_traits(QuantFormat::IQ4_XS).block_bytes, sizeof(BlockIQ4_XS));
  EXPECT_EQ(format_traits(QuantFormat::Q8_1).block_bytes, sizeof(BlockQ8_1));
  EXPECT_EQ(format_traits(QuantFormat::F16).block_bytes, 2u);
  EXPECT_EQ(format_traits(QuantFormat::F32).block_elems, 1u);
}

TEST(Format, FromId) {
  for (QuantFormat f : kAllFormats) EXPECT_EQ(format_from_id(static_cast<uint32_t>(f)), f);
  EXPECT_FALSE(format_from_id(4).has_value());  // removed Q4_2
  EXPECT_FALSE(format_from_id(16).has_value());  // IQ2_XXS: not supported
  EXPECT_FALSE(format_from_id(24).has_value());  // I8
  EXPECT_FALSE(format_from_id(1000).has_value());
  EXPECT_THROW(format_traits(static_cast<QuantFormat>(5)), std::invalid_argument);
}

TEST(Format, FromNameIsCaseInsensitive) {
  EXPECT_EQ(format_from_name("Q4_K"), QuantFormat::Q4_K);
  EXPECT_EQ(format_from_name("q4_k"), QuantFormat::Q4_K);
  EXPECT_EQ(format_from_name("iq4_xs"), QuantFormat::IQ4_XS);
  EXPECT_EQ(format_from_name("Bf16"), QuantFormat::BF16);
  EXPECT_EQ(format_from_name("f32"), QuantFormat::F32);
  EXPECT_FALSE(format_from_name("Q4_K_M").has_value());
  EXPECT_FALSE(format_from_name("Q4").has_value());
  EXPECT_FALSE(format_from_name("").has_value());
  for (QuantFormat f : kAllFormats) EXPECT_EQ(format_from_name(format_traits(f).name), f);
}

TEST(Format, RowBytes) {
  EXPECT_EQ(row_bytes(QuantFormat::Q4_K, 4096), 16u * 144u);
  EXPECT_EQ(row_bytes(QuantFormat::Q8_0, 64), 68u);
  EXPECT_EQ(row_bytes(QuantFormat::F32, 3), 12u);
  EXPECT_EQ(row_bytes(QuantFormat::BF16, 7), 14u);
  EXPECT_EQ(row_bytes(QuantFormat::IQ4_NL, 0), 0u);
  EXPECT_THROW(row_bytes(QuantFormat::Q4_K, 4000), std::invalid_argument);
  EXPECT_THROW(row_bytes(QuantFormat::Q4_0, 33), std::invalid_argument);
}

TEST(Format, ActivationPairing) {
  using F = QuantFormat;
  for (F f : {F::Q4_0, F::Q5_0, F::Q8_0, F::IQ4_NL}) EXPECT_EQ(format_traits(f).activation, F::Q8_0);
  for (F f : {F::Q4_1, F::Q5_1}) EXPECT_EQ(format_traits(f).activation, F::Q8_1);
  for (F f : {F::Q2_K, F::Q3_K, F::Q4_K, F::Q5_K, F::Q6_K, F::IQ4_XS}) {
    EXPECT_EQ(format_traits(f).activation, F::Q8_K);
  }
  for (F f : {F::F32, F::F16, F::BF16}) EXPECT_EQ(format_traits(f).activation, f);
  for (F f : kAllFormats) {
    EXPECT_EQ(format_traits(f).is_weight_format, f != F::Q8_1 && f != F::Q8_K) << format_traits(f).name;
    // Weight and activation blocks line up one to one.
    EXPECT_EQ(format_traits(format_traits(f).activation).block_elems, format_traits(f).block_elems);
  }
}

}  // namespace
}  // namespace lamina::quant

// The tensor type table against ggml's block layouts, written out here from
// the block structs (so a typo in either copy fails), and tensor_byte_size.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>

#include "lamina/gguf/file.h"
#include "lamina/gguf/types.h"

namespace lamina::gguf {
namespace {

struct ExpectedType {
  uint32_t id;
  const char* name;
  uint32_t block_size;
  uint32_t type_size;  // how the bytes of one block add up, from ggml's block structs
};

constexpr uint32_t QK = 32, QK_K = 256;

constexpr ExpectedType kExpected[] = {
    {0, "F32", 1, 4},
    {1, "F16", 1, 2},
    {2, "Q4_0", QK, 2 + QK / 2},                              // d, 4-bit q
    {3, "Q4_1", QK, 2 + 2 + QK / 2},                          // d, m, 4-bit q
    {6, "Q5_0", QK, 2 + 4 + QK / 2},                          // d, qh, 4-bit q
    {7, "Q5_1", QK, 2 + 2 + 4 + QK / 2},                      // d, m, qh, q
    {8, "Q8_0", QK, 2 + QK},                                  // d, int8 q
    {9, "Q8_1", QK, 2 + 2 + QK},                              // d, s, int8 q
    {10, "Q2_K", QK_K, QK_K / 16 + QK_K / 4 + 2 + 2},         // scales, qs, d, dmin
    {11, "Q3_K", QK_K, QK_K / 8 + QK_K / 4 + 12 + 2},         // hmask, qs, scales, d
    {12, "Q4_K", QK_K, 2 + 2 + 12 + QK_K / 2},                // d, dmin, scales, qs
    {13, "Q5_K", QK_K, 2 + 2 + 12 + QK_K / 8 + QK_K / 2},     // + qh
    {14, "Q6_K", QK_K, QK_K / 2 + QK_K / 4 + QK_K / 16 + 2},  // ql, qh, scales, d
    {15, "Q8_K", QK_K, 4 + QK_K + QK_K / 16 * 2},             // f32 d, qs, int16 bsums
    {16, "IQ2_XXS", QK_K, 2 + QK_K / 8 * 2},                  // d, u16 qs
    {17, "IQ2_XS", QK_K, 2 + QK_K / 8 * 2 + QK_K / 32},       // d, qs, scales
    {18, "IQ3_XXS", QK_K, 2 + 3 * QK_K / 8},                  // d, qs + grid signs
    {19, "IQ1_S", QK_K, 2 + QK_K / 8 + QK_K / 32 * 2},        // d, qs, u16 qh
    {20, "IQ4_NL", QK, 2 + QK / 2},                           // d, qs
    {21, "IQ3_S", QK_K,
     2 + QK_K / 4 + QK_K / 32 + QK_K / 8 + QK_K / 64},          // d, qs, qh, signs, scales
    {22, "IQ2_S", QK_K, 2 + QK_K / 4 + QK_K / 32 + QK_K / 32},  // d, qs, qh, scales
    {23, "IQ4_XS", QK_K, 2 + 2 + QK_K / 64 + QK_K / 2},         // d, scales_h, scales_l, qs
    {24, "I8", 1, 1},
    {25, "I16", 1, 2},
    {26, "I32", 1, 4},
    {27, "I64", 1, 8},
    {28, "F64", 1, 8},
    {29, "IQ1_M", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32},  // qs, qh, scales
    {30, "BF16", 1, 2},
    {34, "TQ1_0", QK_K, (QK_K - 4 * QK_K / 64) / 5 + QK_K / 64 + 2},  // qs (base 3), qh, d
    {35, "TQ2_0", QK_K, QK_K / 4 + 2},                                // qs, d
    {39, "MXFP4", QK, 1 + QK / 2},                                    // e8m0 scale, qs
};

TEST(TypeTable, MatchesGgmlBlockLayouts) {
  ASSERT_EQ(tensor_type_count(), std::size(kExpected));
  for (std::size_t i = 0; i < std::size(kExpected); ++i) {
    const auto& want = kExpected[i];
    SCOPED_TRACE(want.name);
    const auto* t = tensor_type_traits(want.id);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(static_cast<uint32_t>(t->type), want.id);
    EXPECT_EQ(t->name, want.name);
    EXPECT_EQ(t->block_size, want.block_size);
    EXPECT_EQ(t->type_size, want.type_size);
    EXPECT_EQ(tensor_type_name(t->type), want.name);
    EXPECT_EQ(tensor_type_from_name(want.name), t->type);
    EXPECT_EQ(&tensor_type_at(i), t);
  }
}

TEST(TypeTable, UnknownIdsAreAbsent) {
  const std::set<uint32_t> retired = {4, 5, 31, 32, 33, 36, 37, 38};
  for (uint32_t id : retired) EXPECT_EQ(tensor_type_traits(id), nullptr) << id;
  for (uint32_t id : {40u, 41u, 1000u, 0xFFFFFFFFu})
    EXPECT_EQ(tensor_type_traits(id), nullptr) << id;
  EXPECT_EQ(tensor_type_name(static_cast<TensorType>(4)), "?");
  EXPECT_EQ(tensor_type_from_name("Q4_0_4_4"), std::nullopt);
  EXPECT_EQ(tensor_type_from_name(""), std::nullopt);
  EXPECT_EQ(tensor_type_from_name("q4_k"), TensorType::Q4_K);
  EXPECT_EQ(tensor_type_from_name("iq4_xs"), TensorType::IQ4_XS);
}

TEST(TypeTable, ValueTypeNames) {
  const char* names[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                         "bool",  "string", "array",  "uint64", "int64",  "float64"};
  for (uint32_t id = 0; id < 13; ++id) {
    EXPECT_TRUE(is_known_value_type(id));
    EXPECT_EQ(value_type_name(static_cast<ValueType>(id)), names[id]);
  }
  EXPECT_FALSE(is_known_value_type(13));
  EXPECT_FALSE(is_known_value_type(0xFFFFFFFF));
}

TEST(TensorByteSize, ComputesAndChecks) {
  const uint64_t q4k_shape[] = {512, 3, 5};
  EXPECT_EQ(tensor_byte_size(TensorType::Q4_K, q4k_shape), 2u * 144u * 3u * 5u);
  const uint64_t f32_shape[] = {7};
  EXPECT_EQ(tensor_byte_size(TensorType::F32, f32_shape), 28u);

  auto expect_error = [](TensorType type, std::vector<uint64_t> shape, const std::string& what) {
    try {
      (void)tensor_byte_size(type, shape);
      ADD_FAILURE() << "no error, expected: " << what;
    } catch (const GgufError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error(TensorType::Q8_0, {33, 2}, "block size");
  expect_error(TensorType::F32, {}, "no dimensions");
  expect_error(TensorType::F32, {4, 0}, "zero");
  expect_error(TensorType::F32, {uint64_t{1} << 32, uint64_t{1} << 32}, "overflow");
  expect_error(TensorType::F32, {uint64_t{1} << 62}, "overflow");
  expect_error(TensorType::Q8_K, {std::numeric_limits<uint64_t>::max() / 256 * 256}, "overflow");
  expect_error(static_cast<TensorType>(31), {32}, "unknown");
}

}  // namespace
}  // namespace lamina::gguf

// Byte-exact layouts of the GGUF quantization blocks (little-endian).
// Half-precision fields hold raw f16 bits; convert with half.h.
#pragma once

#include <array>
#include <cstdint>

namespace lamina::quant {

inline constexpr int kQK = 32;     // values per block of the 32-block formats
inline constexpr int kQK_K = 256;  // values per super-block of the K-quants
inline constexpr int kK_ScaleBytes = 12;  // packed 6-bit scales of Q4_K/Q5_K (and Q3_K)

// value = d * (q - 8), q is a nibble; qs[j] holds value j (low) and j+16 (high).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};

// value = d * q + m.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};

// value = d * (q - 16); bit 4 of value j is bit j of qh (read as little-endian u32).
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// value = d * q + m, q 5-bit as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// value = d * q.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};

// Activation block for Q4_1/Q5_1: value = d * q; s = d * sum(q) (as f16).
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kQK];
};

// 16 sub-blocks of 16: value = d * (scales & 15) * q - dmin * (scales >> 4), q 2-bit.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};

// 16 sub-blocks of 16 with 6-bit signed scales (offset 32); q is 3-bit with the
// high bit in hmask (bit clear means q - 4).
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[kK_ScaleBytes];
  uint16_t d;
};

// 8 sub-blocks of 32 with 6-bit scales and mins packed in `scales`.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kK_ScaleBytes];
  uint8_t qs[kQK_K / 2];
};

// As Q4_K with a fifth bit per value in qh.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kK_ScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

// 16 sub-blocks of 16 with int8 scales; q is 6-bit (low 4 in ql, high 2 in qh), minus 32.
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

// Activation block for the K-quants and IQ4_XS: value = d * q;
// bsums[j] = sum of qs[16j .. 16j+15].
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

// value = d * kIQ4NLValues[q], q a nibble laid out as in Q4_0.
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK / 2];
};

// 8 sub-blocks of 32 with 6-bit scales (low 4 bits in scales_l, high 2 in
// scales_h, offset 32); value = d * (scale - 32) * kIQ4NLValues[q].
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};

// MXFP4 (OCP microscaling FP4): 32 E2M1 values sharing one E8M0 exponent e.
// value = kMXFP4Values[q] * 2^(e - 128) (the table holds twice the E2M1
// values, so the stored exponent is halved once); nibbles as in Q4_0.
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kQK / 2];
};

// Twice the E2M1 values of codes 0..15 (sign bit 3, then 2 exponent bits and
// 1 mantissa bit): 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives, doubled.
inline constexpr std::array<int8_t, 16> kMXFP4Values = {
    0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,
};

// The non-linear 4-bit codebook of IQ4_NL and IQ4_XS.
inline constexpr std::array<int8_t, 16> kIQ4NLValues = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockMXFP4) == 17);

}  // namespace lamina::quant

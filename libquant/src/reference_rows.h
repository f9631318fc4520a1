// Internal: per-format scalar row kernels behind reference.h's dispatchers,
// and the small helpers they share. Each works on whole blocks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lamina/quant/blocks.h"
#include "lamina/quant/format.h"

namespace lamina::quant::ref {

// Blocks in a row of n values; throws std::invalid_argument for an unknown
// format or a partial block.
inline size_t block_count(QuantFormat format, size_t n) {
  return static_cast<size_t>(row_bytes(format, n) / format_traits(format).block_bytes);
}

// Round to nearest, ties to even (for |x| < 2^22, the range of every use).
// Adding 1.5 * 2^23 moves x into the binade where the f32 spacing is 1.
// Values beyond that range (or nan) saturate; every caller clamps after.
inline int nearest_int(float x) {
  constexpr float kLimit = 4194304.0f;  // 2^22
  if (!(x > -kLimit && x < kLimit)) return x > 0.0f ? 4194304 : -4194304;
  constexpr float kShift = 12582912.0f;
  const float shifted = x + kShift;
  return static_cast<int>(shifted - kShift);
}

// 6-bit scale and min of sub-block j (0..7) of Q4_K/Q5_K from the packed
// 12 bytes: bytes 0..3 hold scales 0..3, bytes 4..7 mins 0..3 (low 6 bits);
// scales/mins 4..7 keep their low 4 bits in bytes 8..11 and their top 2 bits
// in the top bits of bytes 0..7.
inline void unpack_k4_scale_min(const uint8_t* packed, int j, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {
    scale = static_cast<uint8_t>((packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4));
    min = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
  }
}

// Signed 6-bit scale of sub-block j (0..15) of Q3_K: low 4 bits are nibbles
// of bytes 0..7 (j < 8 low, else high), the top 2 bits sit in bytes 8..11.
inline int unpack_q3k_scale(const uint8_t* packed, int j) {
  const int low = j < 8 ? packed[j] & 0xF : packed[j - 8] >> 4;
  const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// Index of the IQ4_NL codebook entry nearest to x (ties go up).
int nearest_iq4nl_index(float x);

void dequantize_q4_0(const BlockQ4_0* blocks, size_t nblocks, float* out);
void dequantize_q4_1(const BlockQ4_1* blocks, size_t nblocks, float* out);
void dequantize_q5_0(const BlockQ5_0* blocks, size_t nblocks, float* out);
void dequantize_q5_1(const BlockQ5_1* blocks, size_t nblocks, float* out);
void dequantize_q8_0(const BlockQ8_0* blocks, size_t nblocks, float* out);
void dequantize_q8_1(const BlockQ8_1* blocks, size_t nblocks, float* out);
void dequantize_q2_k(const BlockQ2_K* blocks, size_t nblocks, float* out);
void dequantize_q3_k(const BlockQ3_K* blocks, size_t nblocks, float* out);
void dequantize_q4_k(const BlockQ4_K* blocks, size_t nblocks, float* out);
void dequantize_q5_k(const BlockQ5_K* blocks, size_t nblocks, float* out);
void dequantize_q6_k(const BlockQ6_K* blocks, size_t nblocks, float* out);
void dequantize_q8_k(const BlockQ8_K* blocks, size_t nblocks, float* out);
void dequantize_iq4_nl(const BlockIQ4_NL* blocks, size_t nblocks, float* out);
void dequantize_iq4_xs(const BlockIQ4_XS* blocks, size_t nblocks, float* out);
void dequantize_mxfp4(const BlockMXFP4* blocks, size_t nblocks, float* out);

void quantize_q4_0(const float* in, size_t nblocks, BlockQ4_0* blocks);
void quantize_q4_1(const float* in, size_t nblocks, BlockQ4_1* blocks);
void quantize_q5_0(const float* in, size_t nblocks, BlockQ5_0* blocks);
void quantize_q5_1(const float* in, size_t nblocks, BlockQ5_1* blocks);
void quantize_q8_0(const float* in, size_t nblocks, BlockQ8_0* blocks);
void quantize_q8_1(const float* in, size_t nblocks, BlockQ8_1* blocks);
void quantize_q8_k(const float* in, size_t nblocks, BlockQ8_K* blocks);
void quantize_q2_k(const float* in, size_t nblocks, BlockQ2_K* blocks);
void quantize_q3_k(const float* in, size_t nblocks, BlockQ3_K* blocks);
void quantize_q4_k(const float* in, size_t nblocks, BlockQ4_K* blocks);
void quantize_q5_k(const float* in, size_t nblocks, BlockQ5_K* blocks);
void quantize_q6_k(const float* in, size_t nblocks, BlockQ6_K* blocks);
void quantize_iq4_nl(const float* in, size_t nblocks, BlockIQ4_NL* blocks);
void quantize_iq4_xs(const float* in, size_t nblocks, BlockIQ4_XS* blocks);
void quantize_mxfp4(const float* in, size_t nblocks, BlockMXFP4* blocks);

}  // namespace lamina::quant::ref

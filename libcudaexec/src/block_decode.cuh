// Device-side pieces of the GGUF block layouts, shared by the matmul kernels
// (which turn weights into int8 words for __dp4a) and the row gather (which
// dequantizes to f32 exactly as quant::dequantize_row_ref does).
//
// Blocks of 18, 22, 34, 110 or 210 bytes start at even addresses only, so
// the loads here name the alignment they rely on.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>

#include "lamina/quant/blocks.h"

namespace lamina::cudaexec::detail {

// ---- loads (read-only data: through the non-coherent cache) ----

__device__ __forceinline__ uint32_t load_u16(const uint8_t* p) {
  return __ldg(reinterpret_cast<const unsigned short*>(p));
}
// 4 bytes at a 2-byte aligned address.
__device__ __forceinline__ uint32_t load_u32_a2(const uint8_t* p) {
  return load_u16(p) | (load_u16(p + 2) << 16);
}
__device__ __forceinline__ uint32_t load_u32(const uint8_t* p) {
  return __ldg(reinterpret_cast<const unsigned int*>(p));
}
__device__ __forceinline__ uint2 load_u64(const uint8_t* p) { return __ldg(reinterpret_cast<const uint2*>(p)); }
__device__ __forceinline__ uint4 load_u128(const uint8_t* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }
// Activations are written by an earlier kernel of the same stream: plain loads.
__device__ __forceinline__ int4 load_act16(const uint8_t* p) { return *reinterpret_cast<const int4*>(p); }

// An f16 field (raw bits) as f32; exact.
__device__ __forceinline__ float half_bits_to_float(uint32_t bits) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
}
__device__ __forceinline__ float load_f16(const uint8_t* p) { return half_bits_to_float(load_u16(p)); }
__device__ __forceinline__ float bf16_bits_to_float(uint32_t bits) { return __uint_as_float(bits << 16); }

// Byte `i` (0..3) of w, as an unsigned value.
__device__ __forceinline__ int byte_at(uint32_t w, int i) { return static_cast<int>((w >> (8 * i)) & 0xFFu); }

// ---- Q5_0 / Q5_1: bit 4 of four consecutive values ----

// Bits 0..3 of `bits` moved to bit 4 of bytes 0..3. The multiplier places
// copies of the nibble 7 bits apart, so no two copies overlap.
__device__ __forceinline__ uint32_t spread_bits_to_bit4(uint32_t bits) {
  return ((((bits & 0xFu) * 0x00204081u) & 0x01010101u) << 4);
}

// ---- Q4_K / Q5_K: 6-bit scales and mins of the 8 sub-blocks ----

// The 12 packed bytes as three words. Scales 0..3 and mins 0..3 are the low
// 6 bits of bytes 0..3 and 4..7; scales/mins 4..7 have their low 4 bits in
// the nibbles of bytes 8..11 and their top 2 bits in the top bits of 0..7.
struct KScales {
  uint32_t scales_lo, scales_hi, mins_lo, mins_hi;  // one byte per sub-block
};

__device__ __forceinline__ KScales unpack_k_scales(uint32_t w0, uint32_t w1, uint32_t w2) {
  KScales s;
  s.scales_lo = w0 & 0x3F3F3F3Fu;
  s.mins_lo = w1 & 0x3F3F3F3Fu;
  s.scales_hi = (w2 & 0x0F0F0F0Fu) | ((w0 >> 2) & 0x30303030u);
  s.mins_hi = ((w2 >> 4) & 0x0F0F0F0Fu) | ((w1 >> 2) & 0x30303030u);
  return s;
}
__device__ __forceinline__ int k_scale(const KScales& s, int sub) {
  return byte_at(sub < 4 ? s.scales_lo : s.scales_hi, sub & 3);
}
__device__ __forceinline__ int k_min(const KScales& s, int sub) {
  return byte_at(sub < 4 ? s.mins_lo : s.mins_hi, sub & 3);
}

// ---- Q3_K: 16 signed 6-bit scales ----

// Scale j: low 4 bits in byte j (j < 8, low nibble) or byte j - 8 (high
// nibble); top 2 bits in byte 8 + j % 4 at bit 2 * (j / 4); minus 32.
__device__ __forceinline__ int q3k_scale(uint32_t w0, uint32_t w1, uint32_t w2, int j) {
  const int low_byte = byte_at((j & 7) < 4 ? w0 : w1, j & 3);
  const int low = j < 8 ? (low_byte & 0xF) : (low_byte >> 4);
  const int high = (byte_at(w2, j & 3) >> (2 * (j >> 2))) & 3;
  return (low | (high << 4)) - 32;
}

// ---- 16-entry int8 codebooks: IQ4_NL / IQ4_XS, MXFP4 ----

// Four int8 entries of a codebook (first .. first + 3) as one word.
constexpr uint32_t codebook_word(const std::array<int8_t, 16>& values, int first) {
  uint32_t w = 0;
  for (int i = 0; i < 4; ++i) w |= static_cast<uint32_t>(static_cast<uint8_t>(values[first + i])) << (8 * i);
  return w;
}
// A codebook as template arguments: its four words.
template <const std::array<int8_t, 16>& V>
struct Codebook {
  static constexpr uint32_t w0 = codebook_word(V, 0), w1 = codebook_word(V, 4), w2 = codebook_word(V, 8),
                            w3 = codebook_word(V, 12);
};
using IQ4Codebook = Codebook<quant::kIQ4NLValues>;
using MXFP4Codebook = Codebook<quant::kMXFP4Values>;

// Four codebook indices (0..15, one per byte) to their int8 values: one byte
// permute over entries 0..7, one over 8..15, and bit 3 of each index picks.
template <class C>
__device__ __forceinline__ int codebook_lookup4(uint32_t indices) {
  const uint32_t low3 = indices & 0x07070707u;
  const uint32_t packed = low3 | (low3 >> 4);
  const uint32_t selector = (packed & 0xFFu) | ((packed >> 8) & 0xFF00u);
  const uint32_t from_low = __byte_perm(C::w0, C::w1, selector);
  const uint32_t from_high = __byte_perm(C::w2, C::w3, selector);
  const uint32_t take_high = ((indices >> 3) & 0x01010101u) * 0xFFu;
  return static_cast<int>((from_low & ~take_high) | (from_high & take_high));
}
__device__ __forceinline__ int iq4_lookup4(uint32_t indices) { return codebook_lookup4<IQ4Codebook>(indices); }

// One codebook value as f32 (for the gather).
template <class C>
__device__ __forceinline__ float codebook_value(int index) {
  const uint32_t word = index < 4 ? C::w0 : index < 8 ? C::w1 : index < 12 ? C::w2 : C::w3;
  return static_cast<float>(static_cast<int8_t>(byte_at(word, index & 3)));
}
__device__ __forceinline__ float iq4_value(int index) { return codebook_value<IQ4Codebook>(index); }

// Half an MXFP4 block's E8M0 scale, 2^(e - 128) (the codebook holds twice
// the E2M1 values); e = 0 and 1 give f32 subnormals.
__device__ __forceinline__ float e8m0_half_to_float(uint32_t e) {
  return e < 2 ? __uint_as_float(0x00200000u << e) : __uint_as_float((e - 1) << 23);
}

// ---- dot helpers ----

// sum over 16 bytes of w (4 words) times 16 int8 activations.
__device__ __forceinline__ int dot16(const int (&w)[4], const int4& a) {
  int s = __dp4a(w[0], a.x, 0);
  s = __dp4a(w[1], a.y, s);
  s = __dp4a(w[2], a.z, s);
  return __dp4a(w[3], a.w, s);
}

}  // namespace lamina::cudaexec::detail

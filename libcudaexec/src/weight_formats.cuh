// The quantized weight formats as both matrix-product kernels read them (the
// one-row matvec of matvec_quant.cuh and the tensor-core kernel of
// matmul_mma_kernel.cuh), and the arithmetic contract they share.
//
// The contract, per output (activation row r, weight row o):
//   total = -0
//   32-value block formats: for each block b in increasing order:
//     total = block_step(total, b)   (the block's exact integer dot with
//     the activations times the weight scale, rounded once, then one fused
//     multiply-add with the activation scale)
//   super-block formats: for each super-block (a 256-value segment) in
//     increasing order: total = superblock_step(total, ...), from its exact
//     integer sums over all its sub-blocks (sub-block scales applied in
//     integers)
//   y = total (+ bias) (+ residual)
// Every f32 step is an explicit _rn intrinsic, so neither kernel can be
// contracted differently: an output has the same bits whichever kernel, tile
// or number of rows computed it. The integer parts are exact in int32 (the
// bounds are noted per format).
//
// Weight values are decoded to their final int8 value (Q4_0's q - 8, Q5_0's
// q - 16, Q3_K's and Q6_K's offsets, IQ4 codebook entries); the formats with
// minima (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) add a second, integer minimum term.
//
// Blocks of 18, 22, 34, 110 or 210 bytes start at even addresses only,
// MXFP4's 17-byte blocks anywhere; the loads go through a memory policy
// (global or shared) that names what alignment it needs.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "block_decode.cuh"
#include "lamina/quant/blocks.h"
#include "lamina/quant/format.h"

namespace lamina::cudaexec::detail {

inline constexpr uint32_t kSegmentValues = 256;  // values per segment of the f32 order

// ---- memory policies ----

struct GlobalMem {
  __device__ static uint32_t u8(const uint8_t* p) { return __ldg(p); }
  __device__ static uint32_t u16(const uint8_t* p) { return load_u16(p); }
  __device__ static uint32_t u32(const uint8_t* p) { return load_u32(p); }
  __device__ static uint32_t u32_a2(const uint8_t* p) { return load_u32_a2(p); }
  // Any alignment: the two aligned words around the bytes (the weights'
  // allocation ends with slack for the word past the last block).
  __device__ static uint32_t u32_a1(const uint8_t* p) {
    const auto at = reinterpret_cast<uintptr_t>(p);
    const auto* w = reinterpret_cast<const unsigned int*>(at & ~uintptr_t{3});
    return __funnelshift_r(__ldg(w), __ldg(w + 1), static_cast<uint32_t>(at & 3u) * 8u);
  }
};

// Shared memory: 4 bytes at a 2-byte aligned address come from the two
// aligned words around them.
struct SharedMem {
  __device__ static uint32_t u8(const uint8_t* p) { return *p; }
  __device__ static uint32_t u16(const uint8_t* p) { return *reinterpret_cast<const uint16_t*>(p); }
  __device__ static uint32_t u32(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }
  __device__ static uint32_t u32_a2(const uint8_t* p) {
    const auto at = reinterpret_cast<uintptr_t>(p);
    const auto* w = reinterpret_cast<const uint32_t*>(at & ~uintptr_t{3});
    return __funnelshift_r(w[0], w[1], static_cast<uint32_t>(at & 2u) * 8u);
  }
  __device__ static uint32_t u32_a1(const uint8_t* p) {
    const auto at = reinterpret_cast<uintptr_t>(p);
    const auto* w = reinterpret_cast<const uint32_t*>(at & ~uintptr_t{3});
    return __funnelshift_r(w[0], w[1], static_cast<uint32_t>(at & 3u) * 8u);
  }
};

// ---- the f32 steps (shared by both kernels) ----

// A 32-value block: its dot scaled by the weight scale d_w first, rounded
// once, then total + that * d_a (fused): two f32 operations per output and
// block in the tensor-core kernel. The integer dot arrives biased by
// kFloatMagicBits (the MMA or dp4a sum starts there): the float with bits
// 0x4B400000 + x is 1.5 * 2^23 + x, exact for |x| < 2^22, and
// fma(that, d_w, -1.5 * 2^23 * d_w) is dot * d_w rounded once, because the
// offset is exact (d_w is an f16 value: 13 significant bits in all).
inline constexpr int kFloatMagicBits = 0x4B400000;
inline constexpr float kFloatMagic = 12582912.0f;  // 1.5 * 2^23
__device__ __forceinline__ float exact_float_biased(int biased) {
  return __fsub_rn(__int_as_float(biased), kFloatMagic);
}
__device__ __forceinline__ float block_dot_offset(float dw) { return __fmul_rn(-kFloatMagic, dw); }
__device__ __forceinline__ float block_scaled_dot(int biased_dot, float dw, float offset) {
  return __fmaf_rn(__int_as_float(biased_dot), dw, offset);
}
// With a minimum m_w: the block's exact activation sum times m_w added
// (fused) to the scaled dot.
__device__ __forceinline__ float block_scaled_dot_min(float scaled_dot, float fsum, float mw) {
  return __fmaf_rn(fsum, mw, scaled_dot);
}
__device__ __forceinline__ float block_step(float total, float scaled_dot, float da) {
  return __fmaf_rn(scaled_dot, da, total);
}
// A super-block: total + x * d_a with x = isum * d, or x = isum * d - msum *
// dmin for the formats with minima (the subtraction fused), and the last
// addition fused. fmsum is msum as f32 (exact: |msum| < 2^22).
__device__ __forceinline__ float superblock_part(int isum, float d) { return __fmul_rn(__int2float_rn(isum), d); }
__device__ __forceinline__ float superblock_part_min(int isum, float fmsum, float d, float dmin) {
  return __fmaf_rn(-fmsum, dmin, __fmul_rn(__int2float_rn(isum), d));
}
__device__ __forceinline__ float superblock_step(float total, float part, float da) {
  return __fmaf_rn(part, da, total);
}

// ---- nibble helpers ----

__device__ __forceinline__ uint32_t lo_nibbles(uint32_t w) { return w & 0x0F0F0F0Fu; }
__device__ __forceinline__ uint32_t hi_nibbles(uint32_t w) { return (w >> 4) & 0x0F0F0F0Fu; }
// Every byte of v minus K, as int8 (each byte of v below 0x80 + K): adding
// 0x80 - K carries into no other byte, and flipping bit 7 takes 0x80 back.
template <uint32_t K>
__device__ __forceinline__ uint32_t sub_bytes(uint32_t v) {
  static_assert(K >= 1 && K <= 0x80);
  return (v + (0x80u - K) * 0x01010101u) ^ 0x80808080u;
}

// Sub-block s's scale from the packed signed bytes of sub_scales (s known
// at compile time in the kernels' unrolled loops; a run-time s selects
// without indexing the array).
__device__ __forceinline__ int scale_byte(const uint32_t (&w)[4], int s) {
  const uint32_t word = (s >> 2) == 0 ? w[0] : (s >> 2) == 1 ? w[1] : (s >> 2) == 2 ? w[2] : w[3];
  return static_cast<int>(static_cast<int8_t>(word >> (8 * (s & 3))));
}

// ---- 32-value block formats ----
//
// word<M>(blk, k, lo, hi), k = 0..3: the int8 values 4k .. 4k + 3 (lo) and
// 16 + 4k .. 16 + 4k + 3 (hi) of the block. |dot| <= 32 * 128 * 128 < 2^22.
// Every such block starts with its f16 scale; the affine ones (kMin) follow
// it with their f16 minimum.

template <quant::QuantFormat F, bool kAffine>
struct Block32Base {
  static constexpr quant::QuantFormat kFormat = F;
  static constexpr bool kMin = kAffine;
  template <class M>
  __device__ static float scale(const uint8_t* blk) { return half_bits_to_float(M::u16(blk)); }
  template <class M>
  __device__ static float min_value(const uint8_t* blk) {
    if constexpr (kAffine) return half_bits_to_float(M::u16(blk + 2));
    return 0.0f;
  }
};

struct FmtQ4_0 : Block32Base<quant::QuantFormat::Q4_0, false> {
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockQ4_0);
  template <class M>
  __device__ static void word(const uint8_t* blk, int k, uint32_t& lo, uint32_t& hi) {
    const uint32_t w = M::u32_a2(blk + 2 + 4 * k);
    lo = sub_bytes<0x08u>(lo_nibbles(w));
    hi = sub_bytes<0x08u>(hi_nibbles(w));
  }
};

struct FmtQ4_1 : Block32Base<quant::QuantFormat::Q4_1, true> {
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockQ4_1);
  template <class M>
  __device__ static void word(const uint8_t* blk, int k, uint32_t& lo, uint32_t& hi) {
    const uint32_t w = M::u32(blk + 4 + 4 * k);
    lo = lo_nibbles(w);
    hi = hi_nibbles(w);
  }
};

struct FmtQ5_0 : Block32Base<quant::QuantFormat::Q5_0, false> {
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockQ5_0);
  template <class M>
  __device__ static void word(const uint8_t* blk, int k, uint32_t& lo, uint32_t& hi) {
    const uint32_t qh = M::u32_a2(blk + 2);  // bit j: bit 4 of value j
    const uint32_t w = M::u32_a2(blk + 6 + 4 * k);
    lo = sub_bytes<0x10u>(lo_nibbles(w) | spread_bits_to_bit4(qh >> (4 * k)));
    hi = sub_bytes<0x10u>(hi_nibbles(w) | spread_bits_to_bit4(qh >> (16 + 4 * k)));
  }
};

struct FmtQ5_1 : Block32Base<quant::QuantFormat::Q5_1, true> {
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockQ5_1);
  template <class M>
  __device__ static void word(const uint8_t* blk, int k, uint32_t& lo, uint32_t& hi) {
    const uint32_t qh = M::u32(blk + 4);
    const uint32_t w = M::u32(blk + 8 + 4 * k);
    lo = lo_nibbles(w) | spread_bits_to_bit4(qh >> (4 * k));
    hi = hi_nibbles(w) | spread_bits_to_bit4(qh >> (16 + 4 * k));
  }
};

struct FmtQ8_0 : Block32Base<quant::QuantFormat::Q8_0, false> {
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockQ8_0);
  template <class M>
  __device__ static void word(const uint8_t* blk, int k, uint32_t& lo, uint32_t& hi) {
    lo = M::u32_a2(blk + 2 + 4 * k);
    hi = M::u32_a2(blk + 18 + 4 * k);
  }
};

struct FmtIQ4_NL : Block32Base<quant::QuantFormat::IQ4_NL, false> {
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockIQ4_NL);
  template <class M>
  __device__ static void word(const uint8_t* blk, int k, uint32_t& lo, uint32_t& hi) {
    const uint32_t w = M::u32_a2(blk + 2 + 4 * k);
    lo = static_cast<uint32_t>(iq4_lookup4(lo_nibbles(w)));
    hi = static_cast<uint32_t>(iq4_lookup4(hi_nibbles(w)));
  }
};

// MXFP4: an E8M0 exponent byte, then nibbles as Q4_0's, decoded through the
// doubled E2M1 codebook; the scale, half the exponent's power of two, is
// exact in f32 (so is the contract's offset for every exponent below 2^104).
struct FmtMXFP4 {
  static constexpr quant::QuantFormat kFormat = quant::QuantFormat::MXFP4;
  static constexpr bool kMin = false;
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockMXFP4);
  template <class M>
  __device__ static float scale(const uint8_t* blk) { return e8m0_half_to_float(M::u8(blk)); }
  template <class M>
  __device__ static float min_value(const uint8_t*) { return 0.0f; }
  template <class M>
  __device__ static void word(const uint8_t* blk, int k, uint32_t& lo, uint32_t& hi) {
    const uint32_t w = M::u32_a1(blk + 1 + 4 * k);
    lo = static_cast<uint32_t>(codebook_lookup4<MXFP4Codebook>(lo_nibbles(w)));
    hi = static_cast<uint32_t>(codebook_lookup4<MXFP4Codebook>(hi_nibbles(w)));
  }
};

// ---- 256-value super-block formats ----
//
// kSubValues: values per sub-block (one scale each): 32 or 16.
// frag<M>(blk, s, t, lo, hi): int8 values 4t .. 4t + 3 (lo) and, for 32-value
//   sub-blocks, 16 + 4t .. 16 + 4t + 3 (hi) of sub-block s (t = 0..3).
// sub_scales<M>(blk, w): the sub-blocks' integer scales as signed bytes,
//   4 per word (sub-block s in byte s % 4 of w[s / 4]); sub_scale(w, s)
//   reads one back.
// mins<M>(blk, m): the sub-blocks' minima as bytes, 4 per word (kMin only).
// d<M>, dmin<M>: the super-block's f16 factors.
// The isum bounds: Q4_K 8 * 63 * 32 * 15 * 127 < 2^25, Q5_K < 2^26, Q6_K
// 16 * 128 * 16 * 32 * 127 < 2^27, Q2_K, Q3_K, IQ4_XS smaller; msum
// <= 16 * 63 * 32 * 127 < 2^22.

// What the formats without minima share.
struct NoMinima {
  static constexpr bool kMin = false;
  template <class M>
  __device__ static void mins(const uint8_t*, uint32_t (&)[4]) {}
  template <class M>
  __device__ static float dmin(const uint8_t*) { return 0.0f; }
};

struct FmtQ2_K {
  static constexpr quant::QuantFormat kFormat = quant::QuantFormat::Q2_K;
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockQ2_K);
  static constexpr int kSubValues = 16;
  static constexpr int kSubs = 16;
  static constexpr bool kMin = true;
  // Value 128 n + 32 j + l (l < 32) is bits 2j of qs[32 n + l]; sub-block s = 8 n + 2 j + l / 16.
  template <class M>
  __device__ static void frag(const uint8_t* blk, int s, int t, uint32_t& lo, uint32_t& hi) {
    const int n = s >> 3, j = (s >> 1) & 3;
    const uint32_t q = M::u32(blk + 16 + 32 * n + 16 * (s & 1) + 4 * t);
    lo = (q >> (2 * j)) & 0x03030303u;
    hi = 0;
  }
  template <class M>
  __device__ static void sub_scales(const uint8_t* blk, uint32_t (&w)[4]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = lo_nibbles(M::u32(blk + 4 * i));
  }
  template <class M>
  __device__ static void mins(const uint8_t* blk, uint32_t (&m)[4]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) m[i] = hi_nibbles(M::u32(blk + 4 * i));
  }
  template <class M>
  __device__ static float d(const uint8_t* blk) { return half_bits_to_float(M::u16(blk + 80)); }
  template <class M>
  __device__ static float dmin(const uint8_t* blk) { return half_bits_to_float(M::u16(blk + 82)); }
};

struct FmtQ3_K : NoMinima {
  static constexpr quant::QuantFormat kFormat = quant::QuantFormat::Q3_K;
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockQ3_K);
  static constexpr int kSubValues = 16;
  static constexpr int kSubs = 16;
  // As Q2_K (qs at 32), plus 4 times bit 4 n + j of hmask[l], minus 4.
  template <class M>
  __device__ static void frag(const uint8_t* blk, int s, int t, uint32_t& lo, uint32_t& hi) {
    const int n = s >> 3, j = (s >> 1) & 3;
    const int l0 = 16 * (s & 1) + 4 * t;
    const uint32_t q = M::u32_a2(blk + 32 + 32 * n + l0);
    const uint32_t h = M::u32_a2(blk + l0);
    const uint32_t low = (q >> (2 * j)) & 0x03030303u;
    const uint32_t high = ((h >> (4 * n + j)) & 0x01010101u) << 2;
    lo = sub_bytes<0x04u>(low | high);
    hi = 0;
  }
  // Scale s: low 4 bits in the low (s < 8) or high nibble of byte s % 8,
  // top 2 bits at bit 2 (s / 4) of byte 8 + s % 4; minus 32.
  template <class M>
  __device__ static void sub_scales(const uint8_t* blk, uint32_t (&w)[4]) {
    const uint32_t s0 = M::u32_a2(blk + 96), s1 = M::u32_a2(blk + 100), s2 = M::u32_a2(blk + 104);
    w[0] = sub_bytes<0x20u>(lo_nibbles(s0) | ((s2 & 0x03030303u) << 4));
    w[1] = sub_bytes<0x20u>(lo_nibbles(s1) | (((s2 >> 2) & 0x03030303u) << 4));
    w[2] = sub_bytes<0x20u>(hi_nibbles(s0) | (((s2 >> 4) & 0x03030303u) << 4));
    w[3] = sub_bytes<0x20u>(hi_nibbles(s1) | (((s2 >> 6) & 0x03030303u) << 4));
  }
  template <class M>
  __device__ static float d(const uint8_t* blk) { return half_bits_to_float(M::u16(blk + 108)); }
};

// Q4_K and Q5_K: value 64 p + l (l < 32) is the low nibble of qs[32 p + l],
// value 64 p + 32 + l its high nibble; sub-block s = 2 p + (high). Q5_K's
// bit 4 of value l of sub-block s is bit s of qh[l].
template <bool kFifthBit>
struct FmtQ45_K {
  static constexpr quant::QuantFormat kFormat = kFifthBit ? quant::QuantFormat::Q5_K : quant::QuantFormat::Q4_K;
  static constexpr uint32_t kBlockBytes = kFifthBit ? sizeof(quant::BlockQ5_K) : sizeof(quant::BlockQ4_K);
  static constexpr uint32_t kQsOffset = kFifthBit ? 48 : 16;
  static constexpr int kSubValues = 32;
  static constexpr int kSubs = 8;
  static constexpr bool kMin = true;
  template <class M>
  __device__ static void frag(const uint8_t* blk, int s, int t, uint32_t& lo, uint32_t& hi) {
    const int p = s >> 1;
    const int shift = 4 * (s & 1);
    const uint32_t w0 = M::u32(blk + kQsOffset + 32 * p + 4 * t);
    const uint32_t w1 = M::u32(blk + kQsOffset + 32 * p + 16 + 4 * t);
    lo = (w0 >> shift) & 0x0F0F0F0Fu;
    hi = (w1 >> shift) & 0x0F0F0F0Fu;
    if constexpr (kFifthBit) {
      const uint32_t h0 = M::u32(blk + 16 + 4 * t);
      const uint32_t h1 = M::u32(blk + 32 + 4 * t);
      lo |= ((h0 >> s) & 0x01010101u) << 4;
      hi |= ((h1 >> s) & 0x01010101u) << 4;
    }
  }
  template <class M>
  __device__ static KScales scales(const uint8_t* blk) {
    return unpack_k_scales(M::u32(blk + 4), M::u32(blk + 8), M::u32(blk + 12));
  }
  template <class M>
  __device__ static void sub_scales(const uint8_t* blk, uint32_t (&w)[4]) {
    const KScales k = scales<M>(blk);
    w[0] = k.scales_lo;
    w[1] = k.scales_hi;
    w[2] = w[3] = 0;
  }
  template <class M>
  __device__ static void mins(const uint8_t* blk, uint32_t (&m)[4]) {
    const KScales k = scales<M>(blk);
    m[0] = k.mins_lo;
    m[1] = k.mins_hi;
  }
  template <class M>
  __device__ static float d(const uint8_t* blk) { return half_bits_to_float(M::u16(blk)); }
  template <class M>
  __device__ static float dmin(const uint8_t* blk) { return half_bits_to_float(M::u16(blk + 2)); }
};
using FmtQ4_K = FmtQ45_K<false>;
using FmtQ5_K = FmtQ45_K<true>;

// Q6_K: value 128 n + 32 j + l (l < 32) has its low 4 bits in nibble j / 2 of
// ql[64 n + 32 (j % 2) + l] and its top 2 bits at bit 2 j of qh[32 n + l]; minus 32.
struct FmtQ6_K : NoMinima {
  static constexpr quant::QuantFormat kFormat = quant::QuantFormat::Q6_K;
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockQ6_K);
  static constexpr int kSubValues = 16;
  static constexpr int kSubs = 16;
  template <class M>
  __device__ static void frag(const uint8_t* blk, int s, int t, uint32_t& lo, uint32_t& hi) {
    const int n = s >> 3, j = (s >> 1) & 3;
    const int l0 = 16 * (s & 1) + 4 * t;
    const uint32_t ql = M::u32_a2(blk + 64 * n + 32 * (j & 1) + l0);
    const uint32_t qh = M::u32_a2(blk + 128 + 32 * n + l0);
    const uint32_t v = ((ql >> (4 * (j >> 1))) & 0x0F0F0F0Fu) | (((qh >> (2 * j)) & 0x03030303u) << 4);
    lo = sub_bytes<0x20u>(v);
    hi = 0;
  }
  template <class M>
  __device__ static void sub_scales(const uint8_t* blk, uint32_t (&w)[4]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = M::u32_a2(blk + 192 + 4 * i);
  }
  template <class M>
  __device__ static float d(const uint8_t* blk) { return half_bits_to_float(M::u16(blk + 208)); }
};

// IQ4_XS: sub-block s is 16 bytes of codebook indices at 8 + 16 s: low
// nibbles values 0..15, high nibbles 16..31; scale (6 bits) - 32.
struct FmtIQ4_XS : NoMinima {
  static constexpr quant::QuantFormat kFormat = quant::QuantFormat::IQ4_XS;
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockIQ4_XS);
  static constexpr int kSubValues = 32;
  static constexpr int kSubs = 8;
  template <class M>
  __device__ static void frag(const uint8_t* blk, int s, int t, uint32_t& lo, uint32_t& hi) {
    const uint32_t w = M::u32(blk + 8 + 16 * s + 4 * t);
    lo = static_cast<uint32_t>(iq4_lookup4(lo_nibbles(w)));
    hi = static_cast<uint32_t>(iq4_lookup4(hi_nibbles(w)));
  }
  // Scale s: low 4 bits in nibble s % 2 of scales_l[s / 2], top 2 bits at
  // bit 2 s of scales_h; minus 32.
  template <class M>
  __device__ static void sub_scales(const uint8_t* blk, uint32_t (&w)[4]) {
    const uint32_t high = M::u32(blk) >> 16;  // scales_h
    const uint32_t low = M::u32(blk + 4);     // scales_l
    const uint32_t lo = lo_nibbles(low), hi = hi_nibbles(low);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const uint32_t h = high >> (8 * i);  // 2-bit fields of sub-blocks 4i .. 4i + 3
      const uint32_t spread = (h & 0x3u) | ((h & 0xCu) << 6) | ((h & 0x30u) << 12) | ((h & 0xC0u) << 18);
      w[i] = sub_bytes<0x20u>(__byte_perm(lo, hi, i == 0 ? 0x5140u : 0x7362u) | (spread << 4));
    }
    w[2] = w[3] = 0;
  }
  template <class M>
  __device__ static float d(const uint8_t* blk) { return half_bits_to_float(M::u16(blk)); }
};

}  // namespace lamina::cudaexec::detail

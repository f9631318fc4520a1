// AVX3_DL kernels of the 32-value-block formats: 4 blocks per step.
//
// The 16-byte halves of the values of a group of 4 weight blocks go into the
// 128-bit lanes of one vector (one lane per block), matching the
// activations' grouped layout (activations_access.h); their f16 scales are
// packed in a general register, converted and spread over the 4 lanes of
// each block. (Cross-lane byte permutes would do the gathering in fewer
// instructions but cost about 3 cycles each on Zen 4.) Values are made unsigned (u = q + offset) so that VNNI
// (u8 x i8 -> i32) gives the exact block dots; the offset is taken back with
// the activations' block sums. Each block's i32 lanes are then scaled by
// d_w * d_a and added to f32 lanes. A last partial group is read with
// reads that stop at the row's end (zeros for the missing blocks; the
// activations are zero-padded).

#if defined(LAMINA_QUANT_SIMD_DOT_Q32_AVX3DL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAMINA_QUANT_SIMD_DOT_Q32_AVX3DL_INL_H_
#undef LAMINA_QUANT_SIMD_DOT_Q32_AVX3DL_INL_H_
#else
#define LAMINA_QUANT_SIMD_DOT_Q32_AVX3DL_INL_H_
#endif

#include "simd_avx3dl-inl.h"
#include "simd_matmul_tiles-inl.h"

#if HWY_TARGET == HWY_AVX3_DL

#include <cstring>

#include "lamina/quant/blocks.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE::dl {
namespace q32 {

// Bytes offset .. offset + 15 of each of the n (<= 4) blocks of
// kBlockBytes at p, block j in 128-bit lane j (zeros for missing blocks).
template <size_t kBlockBytes>
HWY_INLINE __m512i LoadLanes(const uint8_t* p, size_t offset, size_t n) {
  const auto lane = [&](size_t j) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + j * kBlockBytes + offset));
  };
  if (HWY_LIKELY(n == 4)) {
    __m512i v = _mm512_castsi128_si512(lane(0));
    v = _mm512_inserti32x4(v, lane(1), 1);
    v = _mm512_inserti32x4(v, lane(2), 2);
    return _mm512_inserti32x4(v, lane(3), 3);
  }
  alignas(64) uint8_t lanes[64] = {};
  for (size_t j = 0; j < n; ++j) std::memcpy(lanes + 16 * j, p + j * kBlockBytes + offset, 16);
  return _mm512_load_si512(lanes);
}

// The f16 at `offset` of each of the n (<= 4) blocks as f32, repeated in
// the 4 lanes of the block (0 for missing blocks).
template <size_t kBlockBytes>
HWY_INLINE __m512 LoadScales(const uint8_t* p, size_t offset, size_t n) {
  uint64_t packed = 0;
  for (size_t j = 0; j < n; ++j) {
    uint16_t h;
    std::memcpy(&h, p + j * kBlockBytes + offset, 2);
    packed |= uint64_t{h} << (16 * j);
  }
  const __m128 four = _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(packed)));
  const __m512i spread = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(four));
}

// Q5 high bits: bit k of the 32-bit qh of block j, for values k < 16 (lo)
// and 16 + k (hi), as byte masks over lanes 16 j + k.
template <size_t kBlockBytes>
HWY_INLINE void LoadHighBitMasks(const uint8_t* p, size_t offset, size_t n, __mmask64& lo, __mmask64& hi) {
  uint64_t lo_bits = 0, hi_bits = 0;
  for (size_t j = 0; j < n; ++j) {
    uint32_t qh;
    std::memcpy(&qh, p + j * kBlockBytes + offset, 4);
    lo_bits |= uint64_t{qh & 0xFFFFu} << (16 * j);
    hi_bits |= uint64_t{qh >> 16} << (16 * j);
  }
  lo = _cvtu64_mask64(lo_bits);
  hi = _cvtu64_mask64(hi_bits);
}

// Low and high nibbles of 16 bytes per lane: values 0..15 and 16..31.
HWY_INLINE void SplitNibbles(__m512i packed, __m512i& lo, __m512i& hi) {
  lo = _mm512_and_si512(packed, Bytes(0x0F));
  hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), Bytes(0x0F));
}

// 4 decoded blocks: unsigned values (halves per 128-bit lane), f16 scales
// and minima widened to 4 f32 lanes per block.
struct Group {
  __m512i lo;
  __m512i hi;
  __m512 d;
  __m512 m;
};

// The nibble formats: values and d (and m) of up to 4 blocks.
template <class Block>
HWY_INLINE Group LoadNibbleGroup(const Block* w, size_t n) {
  const auto* p = reinterpret_cast<const uint8_t*>(w);
  Group g;
  SplitNibbles(LoadLanes<sizeof(Block)>(p, offsetof(Block, qs), n), g.lo, g.hi);
  g.d = LoadScales<sizeof(Block)>(p, offsetof(Block, d), n);
  return g;
}

template <class Block>
HWY_INLINE void AddQ5HighBits(const Block* w, size_t n, Group& g) {
  __mmask64 lo, hi;
  LoadHighBitMasks<sizeof(Block)>(reinterpret_cast<const uint8_t*>(w), offsetof(Block, qh), n, lo, hi);
  g.lo = _mm512_mask_add_epi8(g.lo, lo, g.lo, Bytes(0x10));
  g.hi = _mm512_mask_add_epi8(g.hi, hi, g.hi, Bytes(0x10));
}

// acc += d_w * d_a * (dot(u, a) - (1 << kOffsetShift) * sum(a)) for each of
// the 4 blocks, R activation rows.
template <int kOffsetShift, size_t R>
HWY_INLINE void AccumulateOffset(const Group& g, const ActRow* rows, size_t b, Acc* acc) {
  for (size_t r = 0; r < R; ++r) {
    const int8_t* a = rows[r].values + (b / detail::kGroupBlocks) * detail::kGroupValues;
    // The dot starts from -offset * sum(a) (in each block's first lane).
    const __m512i neg_sums = _mm512_loadu_si512(rows[r].lane_neg_sums + b * detail::kLanesPerBlock);
    __m512i dot = Dpbusd(_mm512_slli_epi32(neg_sums, kOffsetShift), g.lo, _mm512_loadu_si512(a));
    dot = Dpbusd(dot, g.hi, _mm512_loadu_si512(a + 64));
    const __m512 scale = _mm512_mul_ps(g.d, _mm512_loadu_ps(rows[r].lane_scales + b * detail::kLanesPerBlock));
    acc[r].sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[r].sum);
  }
}

// acc += d_w * d_a * dot(u, a) + m * d_a * sum(a), for value = d * u + m.
template <size_t R>
HWY_INLINE void AccumulateWithMin(const Group& g, const ActRow* rows, size_t b, Acc* acc) {
  for (size_t r = 0; r < R; ++r) {
    const int8_t* a = rows[r].values + (b / detail::kGroupBlocks) * detail::kGroupValues;
    __m512i dot = Dpbusd(_mm512_setzero_si512(), g.lo, _mm512_loadu_si512(a));
    dot = Dpbusd(dot, g.hi, _mm512_loadu_si512(a + 64));
    const size_t lanes = b * detail::kLanesPerBlock;
    const __m512 scale = _mm512_mul_ps(g.d, _mm512_loadu_ps(rows[r].lane_scales + lanes));
    acc[r].sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[r].sum);
    acc[r].sum = _mm512_fmadd_ps(g.m, _mm512_loadu_ps(rows[r].lane_scaled_sums + lanes), acc[r].sum);
  }
}

}  // namespace q32

// Each kernel takes up to 4 blocks per step; n is the number present.
struct KernelQ4_0 : KernelBase {
  using Block = BlockQ4_0;
  static constexpr size_t kBlocksPerStep = 4;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t n) {
    q32::AccumulateOffset<3, R>(q32::LoadNibbleGroup(w, n), rows, b, acc);
  }
};

struct KernelIQ4_NL : KernelBase {
  using Block = BlockIQ4_NL;
  static constexpr size_t kBlocksPerStep = 4;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t n) {
    // The codebook plus 128, as unsigned bytes, in every 128-bit lane.
    alignas(64) static constexpr std::array<uint8_t, 64> kCodes = [] {
      std::array<uint8_t, 64> t{};
      for (size_t i = 0; i < 64; ++i) t[i] = static_cast<uint8_t>(kIQ4NLValues[i % 16] + 128);
      return t;
    }();
    q32::Group g = q32::LoadNibbleGroup(w, n);
    const __m512i codes = LoadTable(kCodes);
    g.lo = _mm512_shuffle_epi8(codes, g.lo);
    g.hi = _mm512_shuffle_epi8(codes, g.hi);
    q32::AccumulateOffset<7, R>(g, rows, b, acc);
  }
};

struct KernelQ5_0 : KernelBase {
  using Block = BlockQ5_0;
  static constexpr size_t kBlocksPerStep = 4;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t n) {
    q32::Group g = q32::LoadNibbleGroup(w, n);
    q32::AddQ5HighBits(w, n, g);
    q32::AccumulateOffset<4, R>(g, rows, b, acc);
  }
};

struct KernelQ4_1 : KernelBase {
  using Block = BlockQ4_1;
  static constexpr size_t kBlocksPerStep = 4;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t n) {
    q32::Group g = q32::LoadNibbleGroup(w, n);
    g.m = q32::LoadScales<sizeof(Block)>(reinterpret_cast<const uint8_t*>(w), offsetof(Block, m), n);
    q32::AccumulateWithMin<R>(g, rows, b, acc);
  }
};

struct KernelQ5_1 : KernelBase {
  using Block = BlockQ5_1;
  static constexpr size_t kBlocksPerStep = 4;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t n) {
    q32::Group g = q32::LoadNibbleGroup(w, n);
    q32::AddQ5HighBits(w, n, g);
    g.m = q32::LoadScales<sizeof(Block)>(reinterpret_cast<const uint8_t*>(w), offsetof(Block, m), n);
    q32::AccumulateWithMin<R>(g, rows, b, acc);
  }
};

// Q8_0: values made unsigned by flipping the sign bit (u = q + 128).
struct KernelQ8_0 : KernelBase {
  using Block = BlockQ8_0;
  static constexpr size_t kBlocksPerStep = 4;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t n) {
    const auto* p = reinterpret_cast<const uint8_t*>(w);
    q32::Group g;
    g.lo = _mm512_xor_si512(q32::LoadLanes<sizeof(Block)>(p, offsetof(Block, qs), n), Bytes(0x80));
    g.hi = _mm512_xor_si512(q32::LoadLanes<sizeof(Block)>(p, offsetof(Block, qs) + 16, n), Bytes(0x80));
    g.d = q32::LoadScales<sizeof(Block)>(p, offsetof(Block, d), n);
    // Missing blocks of a partial group: u = 128 against zero activations,
    // scale 0.
    q32::AccumulateOffset<7, R>(g, rows, b, acc);
  }
};

}  // namespace lamina::quant::HWY_NAMESPACE::dl
HWY_AFTER_NAMESPACE();

#endif  // HWY_TARGET == HWY_AVX3_DL
#endif  // per-target include guard

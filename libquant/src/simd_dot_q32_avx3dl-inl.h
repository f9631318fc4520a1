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

// Q8_0 (below) reads its 4 blocks with plain loads: bytes offset .. offset + 15 of each of the n (<= 4) blocks of
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

// A group of 4 consecutive blocks is read as one window of up to 128 bytes
// (two vectors) from which two-source byte permutes (vpermt2b) pick each
// field: one instruction per field instead of a load, insert or scalar
// shift per block. A last partial group is first copied, zero-padded.
struct Window {
  __m512i lo;  // bytes 0..63
  __m512i hi;  // bytes 64..127 (zeros past kBytes)
};

template <size_t kBytes>
HWY_INLINE Window LoadWindow(const uint8_t* p) {
  static_assert(kBytes > 64 && kBytes <= 128);
  // Plain loads where the tail has a vector size: a masked load measured
  // 6-12% slower for Q4_0 on Zen 4.
  constexpr size_t kTailBytes = kBytes - 64;
  const __m512i lo = _mm512_loadu_si512(p);
  if constexpr (kTailBytes == 8) {
    return {lo, _mm512_zextsi128_si512(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 64)))};
  } else if constexpr (kTailBytes == 16) {
    return {lo, _mm512_zextsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 64)))};
  } else if constexpr (kTailBytes == 32) {
    return {lo, _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64)))};
  } else if constexpr (kTailBytes == 64) {
    return {lo, _mm512_loadu_si512(p + 64)};
  } else {
    constexpr __mmask64 kTail = (__mmask64{1} << kTailBytes) - 1;
    return {lo, _mm512_maskz_loadu_epi8(kTail, p + 64)};
  }
}

// The 4 blocks at w, or for a partial group (n < 4) a zero-padded copy of
// its n blocks in `spare`.
template <class Block>
HWY_INLINE const uint8_t* FullGroup(const Block* w, size_t n, Block (&spare)[4]) {
  if (HWY_LIKELY(n == 4)) return reinterpret_cast<const uint8_t*>(w);
  std::memset(spare, 0, sizeof(spare));
  std::memcpy(spare, w, n * sizeof(Block));
  return reinterpret_cast<const uint8_t*>(spare);
}

HWY_INLINE __m512i Pick(const Window& win, const std::array<uint8_t, 64>& index) {
  return _mm512_permutex2var_epi8(win.lo, LoadTable(index), win.hi);
}

// Permute indices: bytes offset .. offset + 15 of block j into 128-bit
// lane j.
template <size_t kBlockBytes, size_t kOffset>
inline constexpr std::array<uint8_t, 64> kLaneBytes = [] {
  std::array<uint8_t, 64> t{};
  for (size_t i = 0; i < 64; ++i) t[i] = static_cast<uint8_t>((i / 16) * kBlockBytes + kOffset + i % 16);
  return t;
}();

// The f16 at kOffset of block i / 4 into 16-bit lane i (i < 16).
template <size_t kBlockBytes, size_t kOffset>
inline constexpr std::array<uint8_t, 64> kHalfPerLane = [] {
  std::array<uint8_t, 64> t{};
  for (size_t i = 0; i < 32; ++i) t[i] = static_cast<uint8_t>((i / 8) * kBlockBytes + kOffset + i % 2);
  return t;
}();

// The f16 at kOffset of each block as f32, in the 4 lanes of its block.
template <size_t kBlockBytes, size_t kOffset>
HWY_INLINE __m512 PickScales(const Window& win) {
  return _mm512_cvtph_ps(_mm512_castsi512_si256(Pick(win, kHalfPerLane<kBlockBytes, kOffset>)));
}

// Q5 high bits: the 32-bit qh of block j in both 64-bit lanes of 128-bit
// lane j; bit-shuffles (vpshufbitqmb) then pick bit k of it for value k
// (lo, k < 16) or value 16 + k (hi) as byte masks over lanes 16 j + k.
template <size_t kBlockBytes, size_t kOffset>
HWY_INLINE void PickHighBitMasks(const Window& win, __mmask64& lo, __mmask64& hi) {
  static constexpr std::array<uint8_t, 64> kIndex = [] {
    std::array<uint8_t, 64> t{};
    for (size_t i = 0; i < 64; ++i) t[i] = static_cast<uint8_t>((i / 16) * kBlockBytes + kOffset + i % 4);
    return t;
  }();
  static constexpr std::array<uint8_t, 64> kLoBits = [] {
    std::array<uint8_t, 64> t{};
    for (size_t i = 0; i < 64; ++i) t[i] = static_cast<uint8_t>(i % 16);
    return t;
  }();
  const __m512i qh = Pick(win, kIndex);
  const __m512i lo_bits = LoadTable(kLoBits);
  lo = _mm512_bitshuffle_epi64_mask(qh, lo_bits);
  hi = _mm512_bitshuffle_epi64_mask(qh, _mm512_add_epi8(lo_bits, Bytes(16)));
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
  __mmask64 neg_lo, neg_hi;  // signed-magnitude formats (MXFP4): the negative values
};

// The nibble formats: values and d of a window of 4 blocks.
template <class Block>
HWY_INLINE Group PickNibbleGroup(const Window& win) {
  Group g;
  SplitNibbles(Pick(win, kLaneBytes<sizeof(Block), offsetof(Block, qs)>), g.lo, g.hi);
  g.d = PickScales<sizeof(Block), offsetof(Block, d)>(win);
  return g;
}

template <class Block>
HWY_INLINE void AddQ5HighBits(const Window& win, Group& g) {
  __mmask64 lo, hi;
  PickHighBitMasks<sizeof(Block), offsetof(Block, qh)>(win, lo, hi);
  g.lo = _mm512_mask_add_epi8(g.lo, lo, g.lo, Bytes(0x10));
  g.hi = _mm512_mask_add_epi8(g.hi, hi, g.hi, Bytes(0x10));
}

// The values of activation blocks b .. b + 3 (grouped layout: first
// halves, then second halves).
struct ActivationGroup {
  __m512i lo, hi;
};
HWY_INLINE ActivationGroup LoadActivationGroup(const ActRow& row, size_t b) {
  const int8_t* a = row.values + (b / detail::kGroupBlocks) * detail::kGroupValues;
  return {_mm512_loadu_si512(a), _mm512_loadu_si512(a + 64)};
}

// kOffsetShift of the signed-magnitude formats (MXFP4): value = d * (neg ?
// -u : u), the sign moved onto the activations, so each lane holds its own
// part of the dot (no offset whose rounding would outweigh small values).
inline constexpr int kSignMagnitude = -2;

// acc[w * R + r] += d_w * d_a * (dot(u, a) - (1 << kOffsetShift) * sum(a))
// (or the signed-magnitude dot) for each of the 4 blocks, W weight groups,
// R activation rows: each activation row is loaded once for all W weight rows.
template <int kOffsetShift, size_t W, size_t R>
HWY_INLINE void AccumulateOffset(const Group* g, const ActRow* rows, size_t b, Acc* acc) {
  constexpr bool kSigned = kOffsetShift == kSignMagnitude;
  for (size_t r = 0; r < R; ++r) {
    const ActivationGroup a = LoadActivationGroup(rows[r], b);
    // The dot starts from -offset * sum(a) (in each block's first lane).
    __m512i start = _mm512_setzero_si512();
    if constexpr (!kSigned)
      start = _mm512_slli_epi32(_mm512_loadu_si512(rows[r].lane_neg_sums + b * detail::kLanesPerBlock), kOffsetShift);
    const __m512 scale_a = _mm512_loadu_ps(rows[r].lane_scales + b * detail::kLanesPerBlock);
    for (size_t w = 0; w < W; ++w) {
      __m512i a_lo = a.lo, a_hi = a.hi;
      if constexpr (kSigned) {
        // Activations are within +-127, so negating them cannot overflow.
        a_lo = _mm512_mask_sub_epi8(a.lo, g[w].neg_lo, _mm512_setzero_si512(), a.lo);
        a_hi = _mm512_mask_sub_epi8(a.hi, g[w].neg_hi, _mm512_setzero_si512(), a.hi);
      }
      const __m512i dot = Dpbusd(Dpbusd(start, g[w].lo, a_lo), g[w].hi, a_hi);
      const __m512 scale = _mm512_mul_ps(g[w].d, scale_a);
      acc[w * R + r].sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[w * R + r].sum);
    }
  }
}

// The same for value = d * u + m: acc += d_w * d_a * dot(u, a) + m * d_a * sum(a).
template <size_t W, size_t R>
HWY_INLINE void AccumulateWithMin(const Group* g, const ActRow* rows, size_t b, Acc* acc) {
  for (size_t r = 0; r < R; ++r) {
    const ActivationGroup a = LoadActivationGroup(rows[r], b);
    const size_t lanes = b * detail::kLanesPerBlock;
    const __m512 scale_a = _mm512_loadu_ps(rows[r].lane_scales + lanes);
    const __m512 scaled_sums = _mm512_loadu_ps(rows[r].lane_scaled_sums + lanes);
    for (size_t w = 0; w < W; ++w) {
      const __m512i dot = Dpbusd(Dpbusd(_mm512_setzero_si512(), g[w].lo, a.lo), g[w].hi, a.hi);
      const __m512 scale = _mm512_mul_ps(g[w].d, scale_a);
      Acc& out = acc[w * R + r];
      out.sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, out.sum);
      out.sum = _mm512_fmadd_ps(g[w].m, scaled_sums, out.sum);
    }
  }
}

// The nibble formats' values and d.
template <class Block>
HWY_INLINE Group LoadNibbleGroup(const Block* w, size_t n) {
  Block spare[4];
  return PickNibbleGroup<Block>(LoadWindow<4 * sizeof(Block)>(FullGroup(w, n, spare)));
}

// Per format: Block, Load (the unsigned values and scales of up to 4
// blocks) and how the weights' offset or minimum is applied.
struct DecodeQ4_0 {
  using Block = BlockQ4_0;
  static constexpr int kOffsetShift = 3;  // u = q + 8
  static HWY_INLINE Group Load(const Block* w, size_t n) { return LoadNibbleGroup(w, n); }
};

struct DecodeIQ4_NL {
  using Block = BlockIQ4_NL;
  static constexpr int kOffsetShift = 7;  // u = codebook value + 128
  static HWY_INLINE Group Load(const Block* w, size_t n) {
    // The codebook plus 128, as unsigned bytes, in every 128-bit lane.
    alignas(64) static constexpr std::array<uint8_t, 64> kCodes = [] {
      std::array<uint8_t, 64> t{};
      for (size_t i = 0; i < 64; ++i) t[i] = static_cast<uint8_t>(kIQ4NLValues[i % 16] + 128);
      return t;
    }();
    Group g = LoadNibbleGroup(w, n);
    const __m512i codes = LoadTable(kCodes);
    g.lo = _mm512_shuffle_epi8(codes, g.lo);
    g.hi = _mm512_shuffle_epi8(codes, g.hi);
    return g;
  }
};

// MXFP4: signed magnitudes (bit 3 of a code is its sign, the low 3 bits
// index E2M1's doubled magnitudes) and one E8M0 byte per block for d,
// 2^(e - 128) formed by scalef (exact, f32 subnormals included).
struct DecodeMXFP4 {
  using Block = BlockMXFP4;
  static constexpr int kOffsetShift = kSignMagnitude;
  static HWY_INLINE Group Load(const Block* w, size_t n) {
    alignas(64) static constexpr std::array<uint8_t, 64> kCodes = [] {
      std::array<uint8_t, 64> t{};
      for (size_t i = 0; i < 64; ++i) t[i] = static_cast<uint8_t>(kMXFP4Values[i % 8]);
      return t;
    }();
    // Block j's exponent byte into every byte of 128-bit lane j; the mask
    // below keeps the low byte of each 32-bit lane, so e is an i32 per lane.
    static constexpr std::array<uint8_t, 64> kExponent = [] {
      std::array<uint8_t, 64> t{};
      for (size_t i = 0; i < 64; ++i) t[i] = static_cast<uint8_t>((i / 16) * sizeof(Block) + offsetof(Block, e));
      return t;
    }();
    Block spare[4];
    const Window win = LoadWindow<4 * sizeof(Block)>(FullGroup(w, n, spare));
    Group g;
    SplitNibbles(Pick(win, kLaneBytes<sizeof(Block), offsetof(Block, qs)>), g.lo, g.hi);
    g.neg_lo = _mm512_test_epi8_mask(g.lo, Bytes(8));
    g.neg_hi = _mm512_test_epi8_mask(g.hi, Bytes(8));
    const __m512i magnitudes = LoadTable(kCodes);
    g.lo = _mm512_shuffle_epi8(magnitudes, _mm512_and_si512(g.lo, Bytes(7)));
    g.hi = _mm512_shuffle_epi8(magnitudes, _mm512_and_si512(g.hi, Bytes(7)));
    const __m512i e = _mm512_maskz_permutex2var_epi8(0x1111111111111111ull, win.lo, LoadTable(kExponent), win.hi);
    const __m512 exponent = _mm512_cvtepi32_ps(_mm512_sub_epi32(e, _mm512_set1_epi32(128)));
    g.d = _mm512_scalef_ps(_mm512_set1_ps(1.0f), exponent);
    return g;
  }
};

struct DecodeQ5_0 {
  using Block = BlockQ5_0;
  static constexpr int kOffsetShift = 4;  // u = q + 16
  static HWY_INLINE Group Load(const Block* w, size_t n) {
    Block spare[4];
    const Window win = LoadWindow<4 * sizeof(Block)>(FullGroup(w, n, spare));
    Group g = PickNibbleGroup<Block>(win);
    AddQ5HighBits<Block>(win, g);
    return g;
  }
};

struct DecodeQ4_1 {
  using Block = BlockQ4_1;
  static constexpr int kOffsetShift = -1;  // has a minimum instead
  static HWY_INLINE Group Load(const Block* w, size_t n) {
    Block spare[4];
    const Window win = LoadWindow<4 * sizeof(Block)>(FullGroup(w, n, spare));
    Group g = PickNibbleGroup<Block>(win);
    g.m = PickScales<sizeof(Block), offsetof(Block, m)>(win);
    return g;
  }
};

struct DecodeQ5_1 {
  using Block = BlockQ5_1;
  static constexpr int kOffsetShift = -1;  // has a minimum instead
  static HWY_INLINE Group Load(const Block* w, size_t n) {
    Block spare[4];
    const Window win = LoadWindow<4 * sizeof(Block)>(FullGroup(w, n, spare));
    Group g = PickNibbleGroup<Block>(win);
    AddQ5HighBits<Block>(win, g);
    g.m = PickScales<sizeof(Block), offsetof(Block, m)>(win);
    return g;
  }
};

// Q8_0: values made unsigned by flipping the sign bit (u = q + 128);
// padding blocks of a partial group give u = 128 against zero activations,
// scale 0. 4 blocks are 136 bytes, so two overlapping windows: bytes
// 0..127 hold the scales and every first half, bytes 8..135 every second
// half. A single activation row (decode) measured faster with plain lane
// loads (LoadForOneRow), several rows with the permutes.
struct DecodeQ8_0 {
  using Block = BlockQ8_0;
  static constexpr int kOffsetShift = 7;
  static HWY_INLINE Group Load(const Block* w, size_t n) {
    constexpr size_t kSecondBase = 4 * sizeof(Block) - 128;
    Block spare[4];
    const uint8_t* p = FullGroup(w, n, spare);
    const Window first = LoadWindow<128>(p);
    const Window second = LoadWindow<128>(p + kSecondBase);
    Group g;
    g.lo = _mm512_xor_si512(Pick(first, kLaneBytes<sizeof(Block), offsetof(Block, qs)>), Bytes(0x80));
    g.hi = _mm512_xor_si512(Pick(second, kLaneBytes<sizeof(Block), offsetof(Block, qs) + 16 - kSecondBase>),
                            Bytes(0x80));
    g.d = PickScales<sizeof(Block), offsetof(Block, d)>(first);
    return g;
  }
  static HWY_INLINE Group LoadForOneRow(const Block* w, size_t n) {
    const auto* p = reinterpret_cast<const uint8_t*>(w);
    Group g;
    g.lo = _mm512_xor_si512(LoadLanes<sizeof(Block)>(p, offsetof(Block, qs), n), Bytes(0x80));
    g.hi = _mm512_xor_si512(LoadLanes<sizeof(Block)>(p, offsetof(Block, qs) + 16, n), Bytes(0x80));
    g.d = LoadScales<sizeof(Block)>(p, offsetof(Block, d), n);
    return g;
  }
};

// Decoders with a variant for a single activation row.
template <class D>
concept HasOneRowLoad = requires(const typename D::Block* w, size_t n) { D::LoadForOneRow(w, n); };

}  // namespace q32

// The kernels take up to 4 blocks per step (n is the number present) of 2
// weight rows at a time: decoding is per weight row, the activations' loads
// are shared by both rows.
template <class Decode>
struct KernelQ32 : KernelBase {
  using Block = typename Decode::Block;
  static constexpr size_t kBlocksPerStep = 4;
  static constexpr size_t kWeightRows = 2;
  static constexpr size_t kRowTile = 8;
  static constexpr bool kSplitSums = false;

  // Weight row i at w + i * stride.
  template <size_t W, size_t R>
  static HWY_INLINE void AccumulateTile(const Block* w, size_t stride, const ActRow* rows, size_t b, Acc* acc,
                                        size_t n) {
    q32::Group g[W];
    for (size_t i = 0; i < W; ++i) {
      if constexpr (R == 1 && q32::HasOneRowLoad<Decode>) {
        g[i] = Decode::LoadForOneRow(w + i * stride, n);
      } else {
        g[i] = Decode::Load(w + i * stride, n);
      }
    }
    if constexpr (Decode::kOffsetShift >= 0 || Decode::kOffsetShift == q32::kSignMagnitude) {
      q32::AccumulateOffset<Decode::kOffsetShift, W, R>(g, rows, b, acc);
    } else {
      q32::AccumulateWithMin<W, R>(g, rows, b, acc);
    }
  }
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t n) {
    AccumulateTile<1, R>(w, 0, rows, b, acc, n);
  }
};

using KernelQ4_0 = KernelQ32<q32::DecodeQ4_0>;
using KernelIQ4_NL = KernelQ32<q32::DecodeIQ4_NL>;
using KernelMXFP4 = KernelQ32<q32::DecodeMXFP4>;
using KernelQ5_0 = KernelQ32<q32::DecodeQ5_0>;
using KernelQ4_1 = KernelQ32<q32::DecodeQ4_1>;
using KernelQ5_1 = KernelQ32<q32::DecodeQ5_1>;
using KernelQ8_0 = KernelQ32<q32::DecodeQ8_0>;

}  // namespace lamina::quant::HWY_NAMESPACE::dl
HWY_AFTER_NAMESPACE();

#endif  // HWY_TARGET == HWY_AVX3_DL
#endif  // per-target include guard

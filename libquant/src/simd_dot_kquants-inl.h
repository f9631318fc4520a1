// Per-target dot kernels of the 256-value super-block formats (Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K, IQ4_XS) against Q8_K activations.
//
// Within a super-block everything is integer and exact: value bytes times
// activation bytes in i16 pairs, times the sub-block scale into i32 lanes;
// minima and offsets use the activations' bsums. Only the final d_w * d_a
// scaling of each super-block is floating point.

#if defined(LAMINA_QUANT_SIMD_DOT_KQUANTS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAMINA_QUANT_SIMD_DOT_KQUANTS_INL_H_
#undef LAMINA_QUANT_SIMD_DOT_KQUANTS_INL_H_
#else
#define LAMINA_QUANT_SIMD_DOT_KQUANTS_INL_H_
#endif

#include <cstring>

#include "lamina/quant/blocks.h"
#include "simd_int8-inl.h"
#include "simd_matmul_tiles-inl.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {

namespace portable {
namespace kq {

#if HWY_TARGET == HWY_SCALAR

// One multiplier per pair of values (values 2p and 2p + 1 of the group take
// multiplier p), as the SIMD targets' i16 pair products take theirs.
struct Scales32 {
  int16_t pair[16];
};

// One multiplier for the whole group.
HWY_INLINE Scales32 SameScale(int scale) {
  Scales32 s;
  for (int16_t& p : s.pair) p = static_cast<int16_t>(scale);
  return s;
}

// `first` for values 0..15 of the group, `second` for 16..31.
HWY_INLINE Scales32 SplitScale(int first, int second) {
  Scales32 s;
  for (size_t p = 0; p < 16; ++p) s.pair[p] = static_cast<int16_t>(p < 8 ? first : second);
  return s;
}

// 16 i16 values (one per 16-value sub-block).
HWY_INLINE Scales32 Load16(const int16_t* HWY_RESTRICT p) {
  Scales32 s;
  std::memcpy(s.pair, p, sizeof(s.pair));
  return s;
}

// sum_s x[s] * y[s] over the 16 sub-blocks.
HWY_INLINE VI32 Dot16(const Scales32& x, const Scales32& y) {
  int32_t sum = 0;
  for (size_t p = 0; p < 16; ++p) sum += static_cast<int32_t>(x.pair[p]) * y.pair[p];
  return hn::Set(DI32(), sum);
}

// acc + sum over the group of w * a * scale (w unsigned or signed bytes).
template <class W>
HWY_INLINE VI32 DotScaledBytes(VI32 acc, const W& w, const int8_t* HWY_RESTRICT a, const Scales32& s) {
  int32_t sum = 0;
  for (size_t p = 0; p < 16; ++p) {
    const int32_t first = static_cast<int32_t>(w.v[2 * p]) * a[2 * p];
    const int32_t second = static_cast<int32_t>(w.v[2 * p + 1]) * a[2 * p + 1];
    sum += (first + second) * s.pair[p];
  }
  return hn::Add(acc, hn::Set(DI32(), sum));
}
HWY_INLINE VI32 DotScaled(VI32 acc, const U8x32& u, const int8_t* HWY_RESTRICT a, const Scales32& s) {
  return DotScaledBytes(acc, u, a, s);
}
HWY_INLINE VI32 DotScaledSigned(VI32 acc, const I8x32& w, const int8_t* HWY_RESTRICT a, const Scales32& s) {
  return DotScaledBytes(acc, w, a, s);
}

#else  // vectors of 128 bits or more

// i16 multipliers for the i16 products of one 32-value group, per part.
struct Scales32 {
  VI16 part[kParts];
};

// One multiplier for the whole group.
HWY_INLINE Scales32 SameScale(int scale) {
  Scales32 s;
  for (size_t i = 0; i < kParts; ++i) s.part[i] = hn::Set(DI16(), static_cast<int16_t>(scale));
  return s;
}

// `first` for values 0..15 of the group, `second` for 16..31.
template <class D = DI16>
HWY_INLINE Scales32 SplitScale(int first, int second) {
  const D d;
  Scales32 s;
  if constexpr (hn::MaxLanes(D()) == 16) {
    const hn::Half<D> dh;
    s.part[0] = hn::Combine(d, hn::Set(dh, static_cast<int16_t>(second)),
                            hn::Set(dh, static_cast<int16_t>(first)));
  } else {
    s.part[0] = hn::Set(d, static_cast<int16_t>(first));
    s.part[kParts - 1] = hn::Set(d, static_cast<int16_t>(second));
  }
  return s;
}

// 16 i16 values (one per 16-value sub-block), in the same lane order as the
// pair products of a group: part i holds entries i * 8 ... on 128-bit
// targets, all 16 on 256-bit ones.
HWY_INLINE Scales32 Load16(const int16_t* HWY_RESTRICT p) {
  Scales32 s;
  for (size_t i = 0; i < kParts; ++i) s.part[i] = hn::LoadU(DI16(), p + i * (16 / kParts));
  return s;
}

// sum_s x[s] * y[s] over the 16 sub-blocks, spread over i32 lanes.
HWY_INLINE VI32 Dot16(const Scales32& x, const Scales32& y) {
  VI32 sum = hn::Zero(DI32());
  for (size_t i = 0; i < kParts; ++i) sum = MulAddPairsI16(sum, x.part[i], y.part[i]);
  return sum;
}

// acc + sum over the group of u * a * scale.
HWY_INLINE VI32 DotScaled(VI32 acc, const U8x32& u, const int8_t* HWY_RESTRICT a,
                          const Scales32& s) {
  const DI8 d;
  for (size_t i = 0; i < kParts; ++i) {
    acc = MulAddPairsI16(acc, MulPairs(u.part[i], hn::LoadU(d, a + i * kVecBytes)), s.part[i]);
  }
  return acc;
}
HWY_INLINE VI32 DotScaledSigned(VI32 acc, const I8x32& w, const int8_t* HWY_RESTRICT a,
                                const Scales32& s) {
  const DI8 d;
  for (size_t i = 0; i < kParts; ++i) {
    acc = MulAddPairsI16(acc, MulPairsSigned(w.part[i], hn::LoadU(d, a + i * kVecBytes)), s.part[i]);
  }
  return acc;
}

#endif  // HWY_TARGET == HWY_SCALAR

// acc += d_w * d_a * isum + neg_dmin * d_a * msum.
HWY_INLINE void AddScaled(VI32 isum, float d, float da, PortableAcc& acc) { AddBlock(acc, isum, d, da); }
HWY_INLINE void AddScaledWithMins(VI32 isum, float d, VI32 msum, float neg_dmin, float da,
                                  PortableAcc& acc) {
  AddScaled(isum, d, da, acc);
  AddBlock(acc, msum, neg_dmin, da);
}

// The 8 six-bit scales and mins of Q4_K/Q5_K: bytes 0..3 hold scales 0..3,
// bytes 4..7 mins 0..3 (low 6 bits each); bytes 8..11 hold the low 4 bits of
// scales (low nibble) and mins (high nibble) 4..7, whose top 2 bits are the
// top bits of bytes 0..3 (scales) and 4..7 (mins).
HWY_INLINE void UnpackScalesMins(const uint8_t* packed, uint8_t* scales, uint8_t* mins) {
  uint32_t w0, w1, w2;
  std::memcpy(&w0, packed, 4);
  std::memcpy(&w1, packed + 4, 4);
  std::memcpy(&w2, packed + 8, 4);
  const uint32_t scales_lo = w0 & 0x3F3F3F3Fu;
  const uint32_t mins_lo = w1 & 0x3F3F3F3Fu;
  const uint32_t scales_hi = (w2 & 0x0F0F0F0Fu) | ((w0 >> 2) & 0x30303030u);
  const uint32_t mins_hi = ((w2 >> 4) & 0x0F0F0F0Fu) | ((w1 >> 2) & 0x30303030u);
  std::memcpy(scales, &scales_lo, 4);
  std::memcpy(scales + 4, &scales_hi, 4);
  std::memcpy(mins, &mins_lo, 4);
  std::memcpy(mins + 4, &mins_hi, 4);
}

// The 16 signed 6-bit scales of Q3_K: low nibbles of bytes 0..7 are scales
// 0..7, their high nibbles scales 8..15; bytes 8..11 hold the top 2 bits,
// scale j in byte 8 + j % 4 at bit 2 * (j / 4).
HWY_INLINE void UnpackQ3Scales(const uint8_t* packed, int16_t* scales) {
  uint32_t a0, a1, top;
  std::memcpy(&a0, packed, 4);
  std::memcpy(&a1, packed + 4, 4);
  std::memcpy(&top, packed + 8, 4);
  const uint32_t words[4] = {
      (a0 & 0x0F0F0F0Fu) | ((top << 4) & 0x30303030u),
      (a1 & 0x0F0F0F0Fu) | ((top << 2) & 0x30303030u),
      ((a0 >> 4) & 0x0F0F0F0Fu) | (top & 0x30303030u),
      ((a1 >> 4) & 0x0F0F0F0Fu) | ((top >> 2) & 0x30303030u),
  };
  uint8_t bytes[16];
  std::memcpy(bytes, words, 16);
  for (int j = 0; j < 16; ++j) scales[j] = static_cast<int16_t>(bytes[j] - 32);
}

}  // namespace kq

struct KernelQ4_K : PortableKernelBase {
  using Block = BlockQ4_K;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* wp, const ActRow* rows, size_t b, Acc* acc, size_t) {
    const Block& w = *wp;
    uint8_t scales[8], mins[8];
    kq::UnpackScalesMins(w.scales, scales, mins);
    HWY_ALIGN int16_t mins16[16];
    for (int s = 0; s < 16; ++s) mins16[s] = mins[s / 2];
    VI32 isum[R];
    for (size_t r = 0; r < R; ++r) isum[r] = hn::Zero(DI32());
    for (size_t j = 0; j < 4; ++j) {
      const U8x32 packed = LoadU8x32(w.qs + 32 * j);
      const U8x32 lo = AndConst(packed, 0x0F);
      const U8x32 hi = ShiftRightBits(packed, 4);
      const kq::Scales32 s_lo = kq::SameScale(scales[2 * j]);
      const kq::Scales32 s_hi = kq::SameScale(scales[2 * j + 1]);
      for (size_t r = 0; r < R; ++r) {
        const int8_t* a = rows[r].values + b * kQK_K + 64 * j;
        isum[r] = kq::DotScaled(isum[r], lo, a, s_lo);
        isum[r] = kq::DotScaled(isum[r], hi, a + 32, s_hi);
      }
    }
    const kq::Scales32 m = kq::Load16(mins16);
    const float d = F16ToF32(w.d);
    const float neg_dmin = -F16ToF32(w.dmin);
    for (size_t r = 0; r < R; ++r) {
      const VI32 msum = kq::Dot16(kq::Load16(rows[r].group_sums + 16 * b), m);
      kq::AddScaledWithMins(isum[r], d, msum, neg_dmin, rows[r].scales[b], acc[r]);
    }
  }
};

struct KernelQ5_K : PortableKernelBase {
  using Block = BlockQ5_K;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* wp, const ActRow* rows, size_t b, Acc* acc, size_t) {
    const Block& w = *wp;
    uint8_t scales[8], mins[8];
    kq::UnpackScalesMins(w.scales, scales, mins);
    HWY_ALIGN int16_t mins16[16];
    for (int s = 0; s < 16; ++s) mins16[s] = mins[s / 2];
    const U8x32 high = LoadU8x32(w.qh);
    VI32 isum[R];
    for (size_t r = 0; r < R; ++r) isum[r] = hn::Zero(DI32());
    for (size_t j = 0; j < 4; ++j) {
      const U8x32 packed = LoadU8x32(w.qs + 32 * j);
      const int bit = static_cast<int>(2 * j);
      const U8x32 lo = OrBytes(AndConst(packed, 0x0F), BitToValue(high, bit, 0x10));
      const U8x32 hi = OrBytes(ShiftRightBits(packed, 4), BitToValue(high, bit + 1, 0x10));
      const kq::Scales32 s_lo = kq::SameScale(scales[2 * j]);
      const kq::Scales32 s_hi = kq::SameScale(scales[2 * j + 1]);
      for (size_t r = 0; r < R; ++r) {
        const int8_t* a = rows[r].values + b * kQK_K + 64 * j;
        isum[r] = kq::DotScaled(isum[r], lo, a, s_lo);
        isum[r] = kq::DotScaled(isum[r], hi, a + 32, s_hi);
      }
    }
    const kq::Scales32 m = kq::Load16(mins16);
    const float d = F16ToF32(w.d);
    const float neg_dmin = -F16ToF32(w.dmin);
    for (size_t r = 0; r < R; ++r) {
      const VI32 msum = kq::Dot16(kq::Load16(rows[r].group_sums + 16 * b), m);
      kq::AddScaledWithMins(isum[r], d, msum, neg_dmin, rows[r].scales[b], acc[r]);
    }
  }
};

// Q6_K: per 128 values, value r uses the nibble (r / 64) of ql[r % 64] and
// the bit pair (r / 32) of qh[r % 32]; q = that 6-bit number - 32.
struct KernelQ6_K : PortableKernelBase {
  using Block = BlockQ6_K;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* wp, const ActRow* rows, size_t b, Acc* acc, size_t) {
    const Block& w = *wp;
    HWY_ALIGN int16_t scales[16];
    for (int s = 0; s < 16; ++s) scales[s] = w.scales[s];
    VI32 isum[R];
    for (size_t r = 0; r < R; ++r) isum[r] = hn::Zero(DI32());
    for (size_t h = 0; h < 2; ++h) {
      const U8x32 ql0 = LoadU8x32(w.ql + 64 * h);
      const U8x32 ql1 = LoadU8x32(w.ql + 64 * h + 32);
      const U8x32 qh = LoadU8x32(w.qh + 32 * h);
      const U8x32 u[4] = {
          OrBytes(AndConst(ql0, 0x0F), ShiftLeftBits(AndConst(qh, 0x03), 4)),
          OrBytes(AndConst(ql1, 0x0F), ShiftLeftBits(AndConst(qh, 0x0C), 2)),
          OrBytes(ShiftRightBits(ql0, 4), AndConst(qh, 0x30)),
          OrBytes(ShiftRightBits(ql1, 4), ShiftRightBits(AndConst(qh, 0xC0), 2)),
      };
      for (size_t k = 0; k < 4; ++k) {
        const size_t s = 8 * h + 2 * k;
        const kq::Scales32 sc = kq::SplitScale(scales[s], scales[s + 1]);
        for (size_t r = 0; r < R; ++r) {
          isum[r] = kq::DotScaled(isum[r], u[k], rows[r].values + b * kQK_K + 128 * h + 32 * k, sc);
        }
      }
    }
    const kq::Scales32 sc16 = kq::Load16(scales);
    const float d = F16ToF32(w.d);
    for (size_t r = 0; r < R; ++r) {
      // The stored values are q + 32: subtract 32 * sum_s scale_s * bsum_s.
      const VI32 offset = kq::Dot16(kq::Load16(rows[r].group_sums + 16 * b), sc16);
      kq::AddScaled(hn::Sub(isum[r], hn::ShiftLeft<5>(offset)), d, rows[r].scales[b], acc[r]);
    }
  }
};

// Q3_K: value r of a 128-value half is bit pair (r / 32) of qs[r % 32] plus
// 4 * bit (half * 4 + r / 32) of hmask[r % 32]; q = that 3-bit number - 4.
struct KernelQ3_K : PortableKernelBase {
  using Block = BlockQ3_K;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* wp, const ActRow* rows, size_t b, Acc* acc, size_t) {
    const Block& w = *wp;
    HWY_ALIGN int16_t scales[16];
    kq::UnpackQ3Scales(w.scales, scales);
    const U8x32 hmask = LoadU8x32(w.hmask);
    VI32 isum[R];
    for (size_t r = 0; r < R; ++r) isum[r] = hn::Zero(DI32());
    for (size_t h = 0; h < 2; ++h) {
      const U8x32 q = LoadU8x32(w.qs + 32 * h);
      for (size_t k = 0; k < 4; ++k) {
        const U8x32 u = OrBytes(AndConst(ShiftRightBits(q, static_cast<int>(2 * k)), 0x03),
                                    BitToValue(hmask, static_cast<int>(4 * h + k), 0x04));
        const size_t s = 8 * h + 2 * k;
        const kq::Scales32 sc = kq::SplitScale(scales[s], scales[s + 1]);
        for (size_t r = 0; r < R; ++r) {
          isum[r] = kq::DotScaled(isum[r], u, rows[r].values + b * kQK_K + 128 * h + 32 * k, sc);
        }
      }
    }
    const kq::Scales32 sc16 = kq::Load16(scales);
    const float d = F16ToF32(w.d);
    for (size_t r = 0; r < R; ++r) {
      // The stored values are q + 4: subtract 4 * sum_s scale_s * bsum_s.
      const VI32 offset = kq::Dot16(kq::Load16(rows[r].group_sums + 16 * b), sc16);
      kq::AddScaled(hn::Sub(isum[r], hn::ShiftLeft<2>(offset)), d, rows[r].scales[b], acc[r]);
    }
  }
};

// Q2_K: 2-bit values laid out as Q3_K's low bits; each 16 values have a
// 4-bit scale (low nibble) and 4-bit min (high nibble).
struct KernelQ2_K : PortableKernelBase {
  using Block = BlockQ2_K;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* wp, const ActRow* rows, size_t b, Acc* acc, size_t) {
    const Block& w = *wp;
    HWY_ALIGN int16_t mins16[16];
    for (int s = 0; s < 16; ++s) mins16[s] = static_cast<int16_t>(w.scales[s] >> 4);
    VI32 isum[R];
    for (size_t r = 0; r < R; ++r) isum[r] = hn::Zero(DI32());
    for (size_t h = 0; h < 2; ++h) {
      const U8x32 q = LoadU8x32(w.qs + 32 * h);
      for (size_t k = 0; k < 4; ++k) {
        const U8x32 u = AndConst(ShiftRightBits(q, static_cast<int>(2 * k)), 0x03);
        const size_t s = 8 * h + 2 * k;
        const kq::Scales32 sc = kq::SplitScale(w.scales[s] & 0xF, w.scales[s + 1] & 0xF);
        for (size_t r = 0; r < R; ++r) {
          isum[r] = kq::DotScaled(isum[r], u, rows[r].values + b * kQK_K + 128 * h + 32 * k, sc);
        }
      }
    }
    const kq::Scales32 m = kq::Load16(mins16);
    const float d = F16ToF32(w.d);
    const float neg_dmin = -F16ToF32(w.dmin);
    for (size_t r = 0; r < R; ++r) {
      const VI32 msum = kq::Dot16(kq::Load16(rows[r].group_sums + 16 * b), m);
      kq::AddScaledWithMins(isum[r], d, msum, neg_dmin, rows[r].scales[b], acc[r]);
    }
  }
};

// IQ4_XS: 8 sub-blocks of 32 IQ4_NL-coded values with 6-bit scales - 32.
struct KernelIQ4_XS : PortableKernelBase {
  using Block = BlockIQ4_XS;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* wp, const ActRow* rows, size_t b, Acc* acc, size_t) {
    const Block& w = *wp;
    VI32 isum[R];
    for (size_t r = 0; r < R; ++r) isum[r] = hn::Zero(DI32());
    for (size_t sub = 0; sub < 8; ++sub) {
      const int low = (w.scales_l[sub / 2] >> (4 * (sub % 2))) & 0xF;
      const int high = (w.scales_h >> (2 * sub)) & 3;
      const kq::Scales32 sc = kq::SameScale((low | (high << 4)) - 32);
      const I8x32 q = LookupNibbles(UnpackNibbles16(w.qs + 16 * sub), kIQ4NLValues.data());
      for (size_t r = 0; r < R; ++r) {
        isum[r] = kq::DotScaledSigned(isum[r], q, rows[r].values + b * kQK_K + 32 * sub, sc);
      }
    }
    const float d = F16ToF32(w.d);
    for (size_t r = 0; r < R; ++r) kq::AddScaled(isum[r], d, rows[r].scales[b], acc[r]);
  }
};

}  // namespace portable
}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard

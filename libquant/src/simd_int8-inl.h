// Per-target integer building blocks of the portable quantized kernels:
// byte vectors of one 32-value group, exact u8/i8 multiply-adds, f16 scales.
//
// Highway 1.0.3 has no op for the x86 byte multiply-add (pmaddubsw) or
// byte sign (psignb), so x86 targets use them directly; every other target
// uses an exact portable formulation. The 1-lane HWY_SCALAR target (the
// x86-64 baseline with g++ before 12.3) has no byte vectors at all: there the
// 32 values are plain arrays and the dots plain loops, with the same exact
// integer results. All results are exact integers.

#if defined(LAMINA_QUANT_SIMD_INT8_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAMINA_QUANT_SIMD_INT8_INL_H_
#undef LAMINA_QUANT_SIMD_INT8_INL_H_
#else
#define LAMINA_QUANT_SIMD_INT8_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "lamina/quant/half.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR

using DI32 = hn::ScalableTag<int32_t>;
using DF32 = hn::ScalableTag<float>;
using VI32 = hn::Vec<DI32>;
using VF32 = hn::Vec<DF32>;
inline constexpr size_t kI32Lanes = 1;

// 32 values as unsigned or signed bytes, in element order.
struct U8x32 {
  uint8_t v[32];
};
struct I8x32 {
  int8_t v[32];
};

HWY_INLINE I8x32 LoadI8x32(const int8_t* HWY_RESTRICT p) {
  I8x32 v;
  std::memcpy(v.v, p, 32);
  return v;
}

HWY_INLINE U8x32 LoadU8x32(const uint8_t* HWY_RESTRICT p) {
  U8x32 v;
  std::memcpy(v.v, p, 32);
  return v;
}

// 16 bytes holding values j (low nibble) and j + 16 (high nibble) -> the 32
// nibbles in element order.
HWY_INLINE U8x32 UnpackNibbles16(const uint8_t* HWY_RESTRICT qs) {
  U8x32 v;
  for (size_t j = 0; j < 16; ++j) {
    v.v[j] = qs[j] & 0x0F;
    v.v[j + 16] = qs[j] >> 4;
  }
  return v;
}

// Bit i of the 32-bit little-endian word at `bits` set -> byte i is `value`.
// Eight bits at a time, without a branch: a multiply copies the byte into
// all 8 bytes of a word, the mask keeps bit j in byte j, adding 0x7F per
// byte carries a set bit into the byte's top bit (never into the next
// byte), and that bit times `value` is the byte's result.
HWY_INLINE U8x32 ExpandBits32(const uint8_t* HWY_RESTRICT bits, uint8_t value) {
  U8x32 v;
  for (size_t byte = 0; byte < 4; ++byte) {
    const uint64_t spread = (uint64_t{bits[byte]} * 0x0101010101010101u) & 0x8040201008040201u;
    const uint64_t ones = ((spread + 0x7F7F7F7F7F7F7F7Fu) >> 7) & 0x0101010101010101u;
    const uint64_t values = ones * value;
    for (size_t j = 0; j < 8; ++j) v.v[8 * byte + j] = static_cast<uint8_t>(values >> (8 * j));
  }
  return v;
}

// Lookup of each nibble (0..15) in a 16-entry signed byte table.
HWY_INLINE I8x32 LookupNibbles(const U8x32& nibbles, const int8_t* HWY_RESTRICT table16) {
  I8x32 v;
  for (size_t i = 0; i < 32; ++i) v.v[i] = table16[nibbles.v[i] & 0x0F];
  return v;
}

// Group-level dots: acc plus the dot of the 32 values.
template <class W>
HWY_INLINE VI32 DotBytes(VI32 acc, const W& w, const I8x32& a) {
  int32_t sum = 0;
  for (size_t i = 0; i < 32; ++i) sum += static_cast<int32_t>(w.v[i]) * a.v[i];
  return hn::Add(acc, hn::Set(DI32(), sum));
}
HWY_INLINE VI32 DotGroup(VI32 acc, const U8x32& u, const I8x32& a) { return DotBytes(acc, u, a); }
HWY_INLINE VI32 DotGroupSigned(VI32 acc, const I8x32& w, const I8x32& a) { return DotBytes(acc, w, a); }

// The 32 values of a block whose first and last 16 values lie at lo and hi.
HWY_INLINE I8x32 LoadHalves(const int8_t* HWY_RESTRICT lo, const int8_t* HWY_RESTRICT hi) {
  I8x32 v;
  std::memcpy(v.v, lo, 16);
  std::memcpy(v.v + 16, hi, 16);
  return v;
}

// Byte-wise operations on the 32 values.
HWY_INLINE U8x32 AndConst(const U8x32& v, uint8_t mask) {
  U8x32 r;
  for (size_t i = 0; i < 32; ++i) r.v[i] = v.v[i] & mask;
  return r;
}
HWY_INLINE U8x32 ShiftRightBits(const U8x32& v, int bits) {
  U8x32 r;
  for (size_t i = 0; i < 32; ++i) r.v[i] = static_cast<uint8_t>(v.v[i] >> bits);
  return r;
}
HWY_INLINE U8x32 ShiftLeftBits(const U8x32& v, int bits) {
  U8x32 r;
  for (size_t i = 0; i < 32; ++i) r.v[i] = static_cast<uint8_t>(v.v[i] << bits);
  return r;
}
HWY_INLINE U8x32 OrBytes(const U8x32& a, const U8x32& b) {
  U8x32 r;
  for (size_t i = 0; i < 32; ++i) r.v[i] = a.v[i] | b.v[i];
  return r;
}
// `value` where bit `bit` of the byte is set, else 0.
HWY_INLINE U8x32 BitToValue(const U8x32& v, int bit, uint8_t value) {
  U8x32 r;
  for (size_t i = 0; i < 32; ++i) r.v[i] = static_cast<uint8_t>(((v.v[i] >> bit) & 1) * value);
  return r;
}

#else  // vectors of 128 bits or more

// One group of 32 values fills a 256-bit vector, or two 128-bit ones.
using DU8 = hn::CappedTag<uint8_t, 32>;
using DI8 = hn::RebindToSigned<DU8>;
using DU16 = hn::Repartition<uint16_t, DU8>;
using DI16 = hn::Repartition<int16_t, DU8>;
using DI32 = hn::Repartition<int32_t, DU8>;
using DF32 = hn::Repartition<float, DU8>;
using VU8 = hn::Vec<DU8>;
using VI8 = hn::Vec<DI8>;
using VI16 = hn::Vec<DI16>;
using VI32 = hn::Vec<DI32>;
using VF32 = hn::Vec<DF32>;

inline constexpr size_t kGroupBytes = 32;
inline constexpr size_t kVecBytes = hn::MaxLanes(DU8());
inline constexpr size_t kParts = kGroupBytes / kVecBytes;
inline constexpr size_t kI32Lanes = hn::MaxLanes(DI32());
static_assert(kParts == 1 || kParts == 2, "needs 128- or 256-bit byte vectors");

// 32 values as unsigned or signed bytes, in element order.
struct U8x32 {
  VU8 part[kParts];
};
struct I8x32 {
  VI8 part[kParts];
};

HWY_INLINE I8x32 LoadI8x32(const int8_t* HWY_RESTRICT p) {
  const DI8 d;
  I8x32 v;
  for (size_t i = 0; i < kParts; ++i) v.part[i] = hn::LoadU(d, p + i * kVecBytes);
  return v;
}

HWY_INLINE U8x32 LoadU8x32(const uint8_t* HWY_RESTRICT p) {
  const DU8 d;
  U8x32 v;
  for (size_t i = 0; i < kParts; ++i) v.part[i] = hn::LoadU(d, p + i * kVecBytes);
  return v;
}

// 16 bytes holding values j (low nibble) and j + 16 (high nibble) -> the 32
// nibbles in element order. (A template so that only the branch for this
// target's width is compiled.)
template <class D = DU8>
HWY_INLINE U8x32 UnpackNibbles16(const uint8_t* HWY_RESTRICT qs) {
  const D d;
  U8x32 v;
  if constexpr (hn::MaxLanes(D()) == 32) {
    const hn::Half<D> dh;
    const auto packed = hn::LoadU(dh, qs);
    v.part[0] = hn::Combine(d, hn::ShiftRight<4>(packed), hn::And(packed, hn::Set(dh, 0x0F)));
  } else {
    const auto packed = hn::LoadU(d, qs);
    v.part[0] = hn::And(packed, hn::Set(d, 0x0F));
    v.part[kParts - 1] = hn::ShiftRight<4>(packed);
  }
  return v;
}

// Bit i of the 32-bit little-endian word at `bits` set -> byte i is `value`.
HWY_INLINE U8x32 ExpandBits32(const uint8_t* HWY_RESTRICT bits, uint8_t value) {
  const DU8 d;
  U8x32 v;
  for (size_t i = 0; i < kParts; ++i) {
    const auto mask = hn::LoadMaskBits(d, bits + i * (kVecBytes / 8));
    v.part[i] = hn::IfThenElseZero(mask, hn::Set(d, value));
  }
  return v;
}

// Lookup of each nibble (0..15) in a 16-entry signed byte table.
HWY_INLINE I8x32 LookupNibbles(const U8x32& nibbles, const int8_t* HWY_RESTRICT table16) {
  const DI8 d;
  const auto table = hn::LoadDup128(d, table16);
  I8x32 v;
  for (size_t i = 0; i < kParts; ++i) {
    v.part[i] = hn::TableLookupBytes(table, hn::BitCast(d, nibbles.part[i]));
  }
  return v;
}

//------------------------------------------------------------------------------
// Byte multiply-adds. "Pairs" give i16 lanes u[2k]a[2k] + u[2k+1]a[2k+1];
// "Quads" give i32 lanes summing four such products. The u operand is
// unsigned; the caller guarantees |u0*a0 + u1*a1| <= 32767 (true for
// u <= 128 and a in [-127, 127]).

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSSE3

HWY_INLINE hn::Vec128<int16_t> MulPairsRaw(hn::Vec128<uint8_t> u, hn::Vec128<int8_t> a) {
  return hn::Vec128<int16_t>{_mm_maddubs_epi16(u.raw, a.raw)};
}
HWY_INLINE hn::Vec128<int8_t> SignRaw(hn::Vec128<int8_t> a, hn::Vec128<int8_t> s) {
  return hn::Vec128<int8_t>{_mm_sign_epi8(a.raw, s.raw)};
}
#if HWY_TARGET <= HWY_AVX2
HWY_INLINE hn::Vec256<int16_t> MulPairsRaw(hn::Vec256<uint8_t> u, hn::Vec256<int8_t> a) {
  return hn::Vec256<int16_t>{_mm256_maddubs_epi16(u.raw, a.raw)};
}
HWY_INLINE hn::Vec256<int8_t> SignRaw(hn::Vec256<int8_t> a, hn::Vec256<int8_t> s) {
  return hn::Vec256<int8_t>{_mm256_sign_epi8(a.raw, s.raw)};
}
#endif

HWY_INLINE VI16 MulPairs(VU8 u, VI8 a) { return MulPairsRaw(u, a); }

HWY_INLINE VI32 MulAddPairsI16(VI32 acc, VI16 x, VI16 y) {
  VI32 unused = hn::Zero(DI32());
  return hn::ReorderWidenMulAccumulate(DI32(), x, y, acc, unused);  // pmaddwd + add
}

HWY_INLINE VI32 MulAddQuads(VI32 acc, VU8 u, VI8 a) {
  return MulAddPairsI16(acc, MulPairs(u, a), hn::Set(DI16(), 1));
}

// |w| as unsigned and a with the sign of w applied, so that their unsigned
// x signed product equals w * a.
HWY_INLINE void SplitSign(VI8 w, VI8 a, VU8& abs_w, VI8& signed_a) {
  abs_w = hn::BitCast(DU8(), hn::Abs(w));
  signed_a = SignRaw(a, w);
}

#else  // Portable: widen to i16 and multiply exactly.

HWY_INLINE void WidenEvenOdd(VU8 u, VI16& even, VI16& odd) {
  const DU16 du16;
  even = hn::BitCast(DI16(), hn::And(hn::BitCast(du16, u), hn::Set(du16, 0x00FF)));
  odd = hn::BitCast(DI16(), hn::ShiftRight<8>(hn::BitCast(du16, u)));
}
HWY_INLINE void WidenEvenOdd(VI8 a, VI16& even, VI16& odd) {
  const DI16 di16;
  even = hn::ShiftRight<8>(hn::ShiftLeft<8>(hn::BitCast(di16, a)));
  odd = hn::ShiftRight<8>(hn::BitCast(di16, a));
}

HWY_INLINE VI16 MulPairs(VU8 u, VI8 a) {
  VI16 ue, uo, ae, ao;
  WidenEvenOdd(u, ue, uo);
  WidenEvenOdd(a, ae, ao);
  return hn::Add(hn::Mul(ue, ae), hn::Mul(uo, ao));
}

HWY_INLINE VI32 MulAddPairsI16(VI32 acc, VI16 x, VI16 y) {
  VI32 odd = hn::Zero(DI32());
  const VI32 even = hn::ReorderWidenMulAccumulate(DI32(), x, y, acc, odd);
  return hn::RearrangeToOddPlusEven(even, odd);
}

HWY_INLINE VI32 MulAddQuads(VI32 acc, VU8 u, VI8 a) {
  VI16 ue, uo, ae, ao;
  WidenEvenOdd(u, ue, uo);
  WidenEvenOdd(a, ae, ao);
  return MulAddPairsI16(MulAddPairsI16(acc, ue, ae), uo, ao);
}

HWY_INLINE void SplitSign(VI8 w, VI8 a, VU8& abs_w, VI8& signed_a) {
  abs_w = hn::BitCast(DU8(), hn::Abs(w));
  const VI8 zero = hn::Zero(DI8());
  signed_a = hn::IfThenElse(hn::Lt(w, zero), hn::Sub(zero, a), a);
}

#endif

// Signed x signed versions (a must not be -128).
HWY_INLINE VI16 MulPairsSigned(VI8 w, VI8 a) {
  VU8 abs_w;
  VI8 signed_a;
  SplitSign(w, a, abs_w, signed_a);
  return MulPairs(abs_w, signed_a);
}
HWY_INLINE VI32 MulAddQuadsSigned(VI32 acc, VI8 w, VI8 a) {
  VU8 abs_w;
  VI8 signed_a;
  SplitSign(w, a, abs_w, signed_a);
  return MulAddQuads(acc, abs_w, signed_a);
}

// Group-level dots: the i32 lanes of the result sum to the dot of the 32
// values (plus acc).
HWY_INLINE VI32 DotGroup(VI32 acc, const U8x32& u, const I8x32& a) {
  for (size_t i = 0; i < kParts; ++i) acc = MulAddQuads(acc, u.part[i], a.part[i]);
  return acc;
}
HWY_INLINE VI32 DotGroupSigned(VI32 acc, const I8x32& w, const I8x32& a) {
  for (size_t i = 0; i < kParts; ++i) acc = MulAddQuadsSigned(acc, w.part[i], a.part[i]);
  return acc;
}

// The 32 values of a block whose first and last 16 values lie at lo and hi.
template <class D = DI8>
HWY_INLINE I8x32 LoadHalves(const int8_t* HWY_RESTRICT lo, const int8_t* HWY_RESTRICT hi) {
  const D d;
  I8x32 v;
  if constexpr (hn::MaxLanes(D()) == 32) {
    const hn::Half<D> dh;
    v.part[0] = hn::Combine(d, hn::LoadU(dh, hi), hn::LoadU(dh, lo));
  } else {
    v.part[0] = hn::LoadU(d, lo);
    v.part[kParts - 1] = hn::LoadU(d, hi);
  }
  return v;
}


// Byte-wise operations on the 32 values.
HWY_INLINE U8x32 AndConst(const U8x32& v, uint8_t mask) {
  U8x32 r;
  for (size_t i = 0; i < kParts; ++i) r.part[i] = hn::And(v.part[i], hn::Set(DU8(), mask));
  return r;
}
HWY_INLINE U8x32 ShiftRightBits(const U8x32& v, int bits) {
  U8x32 r;
  for (size_t i = 0; i < kParts; ++i) r.part[i] = hn::ShiftRightSame(v.part[i], bits);
  return r;
}
HWY_INLINE U8x32 ShiftLeftBits(const U8x32& v, int bits) {
  U8x32 r;
  for (size_t i = 0; i < kParts; ++i) r.part[i] = hn::ShiftLeftSame(v.part[i], bits);
  return r;
}
HWY_INLINE U8x32 OrBytes(const U8x32& a, const U8x32& b) {
  U8x32 r;
  for (size_t i = 0; i < kParts; ++i) r.part[i] = hn::Or(a.part[i], b.part[i]);
  return r;
}
// `value` where bit `bit` of the byte is set, else 0.
HWY_INLINE U8x32 BitToValue(const U8x32& v, int bit, uint8_t value) {
  const DU8 d;
  U8x32 r;
  for (size_t i = 0; i < kParts; ++i) {
    const auto set = hn::TestBit(v.part[i], hn::Set(d, static_cast<uint8_t>(1u << bit)));
    r.part[i] = hn::IfThenElseZero(set, hn::Set(d, value));
  }
  return r;
}

#endif  // HWY_TARGET == HWY_SCALAR

//------------------------------------------------------------------------------
// Scalars

HWY_INLINE float F16ToF32(uint16_t bits) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  return _cvtsh_ss(bits);
#else
  return f16_to_f32(bits);
#endif
}

HWY_INLINE float SumLanes(VF32 v) { return hn::GetLane(hn::SumOfLanes(DF32(), v)); }

}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard

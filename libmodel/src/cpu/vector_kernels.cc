// Highway per-target bodies of vector_kernels.h, and their scalar forms.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "vector_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "lamina/quant/half.h"
#include "vector_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::model::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Doubles per vector, and f32 lanes widened to them (the lower half).
using DD = hn::ScalableTag<double>;
using DF = hn::Rebind<float, DD>;

// The 8 partial sums of dot_rows_f64 as 8 / Lanes(DD) vectors (lane j of
// vector v is sum v * Lanes + j), so every target adds the same products
// into the same sums.
constexpr size_t kSums = 8;

// f16 bits to f32, exactly. x86 converts in hardware (F16C) from AVX2 on;
// below it Highway's emulation maps inf and nan to finite values, so the
// widening is done here in integer lanes: the magnitude bits moved into
// f32's place and scaled by 2^112 (exact for normals and subnormals alike),
// exponent 31 made 255.
template <class D>
HWY_INLINE hn::Vec<D> HalfToFloat(D df, const uint16_t* HWY_RESTRICT p) {
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX2
  const hn::RebindToSigned<D> di;
  const auto bits = hn::BitCast(di, hn::PromoteTo(hn::RebindToUnsigned<D>(), hn::LoadU(hn::Rebind<uint16_t, D>(), p)));
  const auto magnitude = hn::ShiftLeft<13>(hn::And(bits, hn::Set(di, 0x7fff)));
  const auto scaled = hn::BitCast(di, hn::Mul(hn::BitCast(df, magnitude), hn::Set(df, 0x1p112f)));
  const auto special = hn::Eq(hn::And(bits, hn::Set(di, 0x7c00)), hn::Set(di, 0x7c00));
  const auto body = hn::IfThenElse(special, hn::Or(magnitude, hn::Set(di, 0x7f800000)), scaled);
  return hn::BitCast(df, hn::Or(body, hn::ShiftLeft<16>(hn::And(bits, hn::Set(di, 0x8000)))));
#else
  return hn::PromoteTo(df, hn::LoadU(hn::Rebind<hwy::float16_t, D>(), reinterpret_cast<const hwy::float16_t*>(p)));
#endif
}

// f32 to f16 bits, rounded to nearest even, in integer lanes on every target
// (the same steps as quant::f32_to_f16, so the cache holds the same bits
// whichever target wrote it).
template <class D>
HWY_INLINE void FloatToHalf(D df, const float* HWY_RESTRICT x, uint16_t* HWY_RESTRICT out) {
  const hn::RebindToSigned<D> di;
  const auto bits = hn::BitCast(di, hn::LoadU(df, x));
  const auto abs = hn::And(bits, hn::Set(di, 0x7fffffff));
  const auto sign = hn::And(hn::ShiftRight<16>(bits), hn::Set(di, 0x8000));
  // Below 2^-14 (subnormal or zero): adding 0.5 rounds to a multiple of
  // 2^-24 and leaves the f16 code in the low mantissa bits.
  const auto subnormal =
      hn::Sub(hn::BitCast(di, hn::Add(hn::BitCast(df, abs), hn::Set(df, 0.5f))), hn::Set(di, 0x3f000000));
  const auto odd = hn::And(hn::ShiftRight<13>(abs), hn::Set(di, 1));
  const auto normal =
      hn::ShiftRight<13>(hn::Sub(hn::Add(abs, hn::Add(hn::Set(di, 0xfff), odd)), hn::Set(di, 112 << 23)));
  const auto quiet_nan = hn::Or(hn::Set(di, 0x7e00), hn::And(hn::ShiftRight<13>(abs), hn::Set(di, 0x3ff)));
  auto h = hn::IfThenElse(hn::Lt(abs, hn::Set(di, 0x38800000)), subnormal, normal);
  h = hn::IfThenElse(hn::Gt(abs, hn::Set(di, 0x477fefff)), hn::Set(di, 0x7c00), h);  // rounds to >= 65520
  h = hn::IfThenElse(hn::Gt(abs, hn::Set(di, 0x7f800000)), quiet_nan, h);
  const hn::Rebind<uint16_t, D> du16;
  hn::StoreU(hn::DemoteTo(du16, hn::Or(h, sign)), du16, out);
}

struct RowsF32 {
  using T = float;
  static HWY_INLINE hn::Vec<DD> Load(const T* HWY_RESTRICT p) { return hn::PromoteTo(DD(), hn::LoadU(DF(), p)); }
  static double Scalar(T x) { return x; }
};
struct RowsF16 {
  using T = uint16_t;
  static HWY_INLINE hn::Vec<DD> Load(const T* HWY_RESTRICT p) { return hn::PromoteTo(DD(), HalfToFloat(DF(), p)); }
  static double Scalar(T x) { return quant::f16_to_f32(x); }
};

// R rows at once: a's vectors are loaded once for all of them, and the R
// rows' sums are independent chains of additions.
template <class Rows, size_t R>
HWY_INLINE void DotRowsTile(const float* HWY_RESTRICT a, const typename Rows::T* HWY_RESTRICT rows, size_t stride,
                            size_t n, double* HWY_RESTRICT out) {
  const DD dd;
  const DF df;
  constexpr size_t kMaxVectors = kSums;  // at least one double per vector
  const size_t N = hn::Lanes(dd);
  const size_t vectors = kSums / N;
  hn::Vec<DD> sums[R][kMaxVectors];
  for (size_t r = 0; r < R; ++r) {
    for (size_t v = 0; v < vectors; ++v) sums[r][v] = hn::Zero(dd);
  }
  size_t i = 0;
  for (; i + kSums <= n; i += kSums) {
    for (size_t v = 0; v < vectors; ++v) {
      const auto x = hn::PromoteTo(dd, hn::LoadU(df, a + i + v * N));
      for (size_t r = 0; r < R; ++r) {
        sums[r][v] = hn::Add(sums[r][v], hn::Mul(x, Rows::Load(rows + r * stride + i + v * N)));
      }
    }
  }
  for (size_t r = 0; r < R; ++r) {
    HWY_ALIGN double lanes[kSums];
    for (size_t v = 0; v < vectors; ++v) hn::Store(sums[r][v], dd, lanes + v * N);
    // The tail goes into sums 0, 1, ... as the scalar loop adds it.
    for (size_t k = i, l = 0; k < n; ++k, ++l) lanes[l] += static_cast<double>(a[k]) * Rows::Scalar(rows[r * stride + k]);
    double total = 0.0;
    for (double s : lanes) total += s;
    out[r] = total;
  }
}

template <class Rows>
void DotRows(const float* HWY_RESTRICT a, const typename Rows::T* HWY_RESTRICT rows, size_t stride, size_t n_rows,
             size_t n, double* HWY_RESTRICT out) {
  constexpr size_t kTile = 4;
  size_t r = 0;
  for (; r + kTile <= n_rows; r += kTile) DotRowsTile<Rows, kTile>(a, rows + r * stride, stride, n, out + r);
  for (; r < n_rows; ++r) DotRowsTile<Rows, 1>(a, rows + r * stride, stride, n, out + r);
}

// K vectors of acc held in registers while every row passes.
template <class Rows, size_t K>
HWY_INLINE void AccumulateChunk(const double* HWY_RESTRICT p, const typename Rows::T* HWY_RESTRICT rows,
                                size_t stride, size_t n_rows, double* HWY_RESTRICT acc) {
  const DD dd;
  const size_t N = hn::Lanes(dd);
  hn::Vec<DD> sums[K];
  for (size_t k = 0; k < K; ++k) sums[k] = hn::LoadU(dd, acc + k * N);
  for (size_t j = 0; j < n_rows; ++j) {
    const auto vp = hn::Set(dd, p[j]);
    const typename Rows::T* row = rows + j * stride;
    for (size_t k = 0; k < K; ++k) sums[k] = hn::Add(sums[k], hn::Mul(vp, Rows::Load(row + k * N)));
  }
  for (size_t k = 0; k < K; ++k) hn::StoreU(sums[k], dd, acc + k * N);
}

template <class Rows>
void AccumulateRows(const double* HWY_RESTRICT p, const typename Rows::T* HWY_RESTRICT rows, size_t stride,
                    size_t n_rows, size_t n, double* HWY_RESTRICT acc) {
  constexpr size_t kChunk = 8;
  const size_t N = hn::Lanes(DD());
  size_t i = 0;
  for (; i + kChunk * N <= n; i += kChunk * N) AccumulateChunk<Rows, kChunk>(p, rows + i, stride, n_rows, acc + i);
  for (; i + N <= n; i += N) AccumulateChunk<Rows, 1>(p, rows + i, stride, n_rows, acc + i);
  for (; i < n; ++i) {
    for (size_t j = 0; j < n_rows; ++j) acc[i] += p[j] * Rows::Scalar(rows[j * stride + i]);
  }
}

void DotRowsF32(const float* a, const float* rows, size_t stride, size_t n_rows, size_t n, double* out) {
  DotRows<RowsF32>(a, rows, stride, n_rows, n, out);
}
void DotRowsF16(const float* a, const uint16_t* rows, size_t stride, size_t n_rows, size_t n, double* out) {
  DotRows<RowsF16>(a, rows, stride, n_rows, n, out);
}
void AccumulateRowsF32(const double* p, const float* rows, size_t stride, size_t n_rows, size_t n, double* acc) {
  AccumulateRows<RowsF32>(p, rows, stride, n_rows, n, acc);
}
void AccumulateRowsF16(const double* p, const uint16_t* rows, size_t stride, size_t n_rows, size_t n, double* acc) {
  AccumulateRows<RowsF16>(p, rows, stride, n_rows, n, acc);
}

void F32ToF16Row(const float* HWY_RESTRICT x, uint16_t* HWY_RESTRICT out, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= n; i += N) FloatToHalf(df, x + i, out + i);
  if (i < n) {
    // The same operations on a zero-padded copy of the tail.
    HWY_ALIGN float x_tail[hn::MaxLanes(df)] = {};
    HWY_ALIGN uint16_t o_tail[hn::MaxLanes(df)];
    for (size_t k = i; k < n; ++k) x_tail[k - i] = x[k];
    FloatToHalf(df, x_tail, o_tail);
    for (size_t k = i; k < n; ++k) out[k] = o_tail[k - i];
  }
}

void F16ToF32Row(const uint16_t* HWY_RESTRICT x, float* HWY_RESTRICT out, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(HalfToFloat(df, x + i), df, out + i);
  if (i < n) {
    HWY_ALIGN uint16_t x_tail[hn::MaxLanes(df)] = {};
    HWY_ALIGN float o_tail[hn::MaxLanes(df)];
    for (size_t k = i; k < n; ++k) x_tail[k - i] = x[k];
    hn::Store(HalfToFloat(df, x_tail), df, o_tail);
    for (size_t k = i; k < n; ++k) out[k] = o_tail[k - i];
  }
}

void SiluMul(const float* HWY_RESTRICT gate, const float* HWY_RESTRICT up, float* HWY_RESTRICT out, size_t n) {
  const DD dd;
  const DF df;
  const size_t N = hn::Lanes(dd);
  const auto one = hn::Set(dd, 1.0);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto g = hn::PromoteTo(dd, hn::LoadU(df, gate + i));
    const auto silu = hn::Div(g, hn::Add(one, hn::Exp(dd, hn::Neg(g))));
    hn::StoreU(hn::Mul(hn::DemoteTo(df, silu), hn::LoadU(df, up + i)), df, out + i);
  }
  if (i < n) {
    // The same operations on a zero-padded copy of the tail.
    HWY_ALIGN float g_tail[hn::MaxLanes(DF())] = {};
    HWY_ALIGN float u_tail[hn::MaxLanes(DF())] = {};
    HWY_ALIGN float o_tail[hn::MaxLanes(DF())];
    for (size_t k = i; k < n; ++k) g_tail[k - i] = gate[k], u_tail[k - i] = up[k];
    const auto g = hn::PromoteTo(dd, hn::Load(df, g_tail));
    const auto silu = hn::Div(g, hn::Add(one, hn::Exp(dd, hn::Neg(g))));
    hn::Store(hn::Mul(hn::DemoteTo(df, silu), hn::Load(df, u_tail)), df, o_tail);
    for (size_t k = i; k < n; ++k) out[k] = o_tail[k - i];
  }
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace lamina::model::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cmath>

namespace lamina::model::cpu {
HWY_EXPORT(DotRowsF32);
HWY_EXPORT(DotRowsF16);
HWY_EXPORT(AccumulateRowsF32);
HWY_EXPORT(AccumulateRowsF16);
HWY_EXPORT(F32ToF16Row);
HWY_EXPORT(F16ToF32Row);
HWY_EXPORT(SiluMul);
HWY_EXPORT(TargetName);

void dot_rows_f64(const float* a, const float* rows, std::size_t stride, std::size_t n_rows, std::size_t n,
                  double* out) {
  HWY_DYNAMIC_DISPATCH(DotRowsF32)(a, rows, stride, n_rows, n, out);
}
void dot_rows_f64(const float* a, const uint16_t* rows, std::size_t stride, std::size_t n_rows, std::size_t n,
                  double* out) {
  HWY_DYNAMIC_DISPATCH(DotRowsF16)(a, rows, stride, n_rows, n, out);
}
void accumulate_rows_f64(const double* p, const float* rows, std::size_t stride, std::size_t n_rows,
                         std::size_t n, double* acc) {
  HWY_DYNAMIC_DISPATCH(AccumulateRowsF32)(p, rows, stride, n_rows, n, acc);
}
void accumulate_rows_f64(const double* p, const uint16_t* rows, std::size_t stride, std::size_t n_rows,
                         std::size_t n, double* acc) {
  HWY_DYNAMIC_DISPATCH(AccumulateRowsF16)(p, rows, stride, n_rows, n, acc);
}
void f32_to_f16_row(const float* x, uint16_t* out, std::size_t n) { HWY_DYNAMIC_DISPATCH(F32ToF16Row)(x, out, n); }
void f16_to_f32_row(const uint16_t* x, float* out, std::size_t n) { HWY_DYNAMIC_DISPATCH(F16ToF32Row)(x, out, n); }
void silu_mul(const float* gate, const float* up, float* out, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(SiluMul)(gate, up, out, n);
}
const char* vector_kernels_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

namespace scalar {
namespace {
double widen(float x) { return x; }
double widen(uint16_t h) { return quant::f16_to_f32(h); }

template <class T>
void dot_rows(const float* a, const T* rows, std::size_t stride, std::size_t n_rows, std::size_t n, double* out) {
  for (std::size_t r = 0; r < n_rows; ++r) {
    const T* row = rows + r * stride;
    constexpr std::size_t kLanes = 8;
    double lanes[kLanes] = {};
    for (std::size_t i = 0; i < n; ++i) lanes[i % kLanes] += static_cast<double>(a[i]) * widen(row[i]);
    double sum = 0.0;
    for (double v : lanes) sum += v;
    out[r] = sum;
  }
}

template <class T>
void accumulate_rows(const double* p, const T* rows, std::size_t stride, std::size_t n_rows, std::size_t n,
                     double* acc) {
  for (std::size_t r = 0; r < n_rows; ++r) {
    for (std::size_t i = 0; i < n; ++i) acc[i] += p[r] * widen(rows[r * stride + i]);
  }
}
}  // namespace

void dot_rows_f64(const float* a, const float* rows, std::size_t stride, std::size_t n_rows, std::size_t n,
                  double* out) {
  dot_rows(a, rows, stride, n_rows, n, out);
}
void dot_rows_f64(const float* a, const uint16_t* rows, std::size_t stride, std::size_t n_rows, std::size_t n,
                  double* out) {
  dot_rows(a, rows, stride, n_rows, n, out);
}
void accumulate_rows_f64(const double* p, const float* rows, std::size_t stride, std::size_t n_rows,
                         std::size_t n, double* acc) {
  accumulate_rows(p, rows, stride, n_rows, n, acc);
}
void accumulate_rows_f64(const double* p, const uint16_t* rows, std::size_t stride, std::size_t n_rows,
                         std::size_t n, double* acc) {
  accumulate_rows(p, rows, stride, n_rows, n, acc);
}
void f32_to_f16_row(const float* x, uint16_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = quant::f32_to_f16(x[i]);
}
void f16_to_f32_row(const uint16_t* x, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = quant::f16_to_f32(x[i]);
}
void silu_mul(const float* gate, const float* up, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g))) * up[i];
  }
}
}  // namespace scalar

}  // namespace lamina::model::cpu
#endif  // HWY_ONCE

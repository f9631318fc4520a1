// Highway per-target bodies of vector_kernels.h, and their scalar forms.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "vector_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cmath>

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

// f32 lanes of a KV row, widened from f16 where the cache holds f16.
using DF32 = hn::ScalableTag<float>;
using VF32 = hn::Vec<DF32>;
struct RowsF32 {
  using T = float;
  static HWY_INLINE VF32 Load(const T* HWY_RESTRICT p) { return hn::LoadU(DF32(), p); }
  static float Scalar(T x) { return x; }
};
struct RowsF16 {
  using T = uint16_t;
  static HWY_INLINE VF32 Load(const T* HWY_RESTRICT p) { return HalfToFloat(DF32(), p); }
  static float Scalar(T x) { return quant::f16_to_f32(x); }
};

#if HWY_TARGET == HWY_SCALAR
// One lane (the x86-64 baseline with g++ before 12.3): the scalar forms
// themselves, exact sums in f64 rounded once to f32. In f32 each row's sum
// would be one chain without fused multiply-adds, and its rounding tipped
// activations over Q8 rounding boundaries that the f64 reference does not
// cross (gemma2 Q4_K_M of tests/model, past its KL bound). Each result is
// computed alone, in one order, whatever comes with it.
inline constexpr size_t kScalarChunk = 64;

template <class Rows>
void DotRows(const float* HWY_RESTRICT a, size_t a_stride, size_t n_queries, const typename Rows::T* HWY_RESTRICT rows,
             size_t stride, size_t n_rows, size_t n, float* HWY_RESTRICT out, size_t out_stride) {
  double sums[kScalarChunk];
  for (size_t q = 0; q < n_queries; ++q) {
    for (size_t r = 0; r < n_rows; r += kScalarChunk) {
      const size_t count = std::min(kScalarChunk, n_rows - r);
      scalar::dot_rows(a + q * a_stride, rows + r * stride, stride, count, n, sums);
      for (size_t k = 0; k < count; ++k) out[q * out_stride + r + k] = static_cast<float>(sums[k]);
    }
  }
}

template <class Rows>
void AccumulateRows(const float* HWY_RESTRICT p, size_t p_stride, size_t n_queries,
                    const typename Rows::T* HWY_RESTRICT rows, size_t stride, size_t n_rows, size_t n,
                    float* HWY_RESTRICT acc, size_t acc_stride) {
  double sums[kScalarChunk];
  for (size_t q = 0; q < n_queries; ++q) {
    float* a = acc + q * acc_stride;
    for (size_t i = 0; i < n; i += kScalarChunk) {
      const size_t count = std::min(kScalarChunk, n - i);
      for (size_t k = 0; k < count; ++k) sums[k] = a[i + k];
      scalar::accumulate_rows(p + q * p_stride, rows + i, stride, n_rows, count, sums);
      for (size_t k = 0; k < count; ++k) a[i + k] = static_cast<float>(sums[k]);
    }
  }
}

#else  // vectors

// G queries (a's rows, a_stride apart) against up to R = N / G rows at once
// (N, the lane count): accumulator g * R + r holds query g's chain of fused
// multiply-adds with row r over their vectors in order, the ragged end
// (zero-padded) last; each row's vectors are loaded (f16 widened) once for
// the G queries. The N accumulators' lanes are then summed together by
// pairing even and odd lanes log2(N) times, which leaves accumulator k's sum,
// a pairwise sum of its lanes in order, in lane k. Every accumulator meets
// the same pairing tree wherever it sits, so a (query, row) result is the
// same whatever queries and rows come with it (absent ones are zeros in lanes
// of their own): a fixed order for a target, one vector add per result where
// a lane sum per result takes log2(N).
// kFull: R rows, known when compiling, so that the sums stay in registers.
template <class Rows, size_t G, bool kFull>
HWY_INLINE void DotRowsTile(const float* HWY_RESTRICT a, size_t a_stride, const typename Rows::T* HWY_RESTRICT rows,
                            size_t stride, size_t rows_given, size_t n, float* HWY_RESTRICT out, size_t out_stride) {
  const DF32 df;
  constexpr size_t N = hn::MaxLanes(DF32());
  constexpr size_t R = N / G;
  static_assert(R >= 1, "at most N queries at once");
  const size_t n_rows = kFull ? R : rows_given;
  VF32 sums[N];
  for (size_t k = 0; k < N; ++k) sums[k] = hn::Zero(df);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    VF32 x[G];
    for (size_t g = 0; g < G; ++g) x[g] = hn::LoadU(df, a + g * a_stride + i);
    for (size_t r = 0; r < n_rows; ++r) {
      const VF32 row = Rows::Load(rows + r * stride + i);
      for (size_t g = 0; g < G; ++g) sums[g * R + r] = hn::MulAdd(x[g], row, sums[g * R + r]);
    }
  }
  if (i < n) {
    HWY_ALIGN float a_tail[G][hn::MaxLanes(df)] = {};
    HWY_ALIGN float row_tail[hn::MaxLanes(df)] = {};
    for (size_t g = 0; g < G; ++g) {
      for (size_t k = i; k < n; ++k) a_tail[g][k - i] = a[g * a_stride + k];
    }
    for (size_t r = 0; r < n_rows; ++r) {
      for (size_t k = i; k < n; ++k) row_tail[k - i] = Rows::Scalar(rows[r * stride + k]);
      const VF32 row = hn::Load(df, row_tail);
      for (size_t g = 0; g < G; ++g) sums[g * R + r] = hn::MulAdd(hn::Load(df, a_tail[g]), row, sums[g * R + r]);
    }
  }
  for (size_t width = N; width > 1; width /= 2) {
    for (size_t j = 0; j < width / 2; ++j) {
      sums[j] = hn::Add(hn::ConcatEven(df, sums[2 * j + 1], sums[2 * j]), hn::ConcatOdd(df, sums[2 * j + 1], sums[2 * j]));
    }
  }
  if (G == 1 && n_rows == N) {
    hn::StoreU(sums[0], df, out);
  } else {
    HWY_ALIGN float lanes[hn::MaxLanes(df)];
    hn::Store(sums[0], df, lanes);
    for (size_t g = 0; g < G; ++g) {
      for (size_t r = 0; r < n_rows; ++r) out[g * out_stride + r] = lanes[g * R + r];
    }
  }
}

template <class Rows, size_t G>
void DotRowsGroup(const float* HWY_RESTRICT a, size_t a_stride, const typename Rows::T* HWY_RESTRICT rows,
                  size_t stride, size_t n_rows, size_t n, float* HWY_RESTRICT out, size_t out_stride) {
  constexpr size_t R = hn::MaxLanes(DF32()) / G;
  size_t r = 0;
  for (; r + R <= n_rows; r += R) DotRowsTile<Rows, G, true>(a, a_stride, rows + r * stride, stride, R, n, out + r, out_stride);
  if (r < n_rows) {
    DotRowsTile<Rows, G, false>(a, a_stride, rows + r * stride, stride, n_rows - r, n, out + r, out_stride);
  }
}

// Queries in groups of up to 4 (fewer where a vector has fewer lanes).
template <class Rows>
void DotRows(const float* HWY_RESTRICT a, size_t a_stride, size_t n_queries, const typename Rows::T* HWY_RESTRICT rows,
             size_t stride, size_t n_rows, size_t n, float* HWY_RESTRICT out, size_t out_stride) {
  constexpr size_t kMaxGroup = std::min<size_t>(4, hn::MaxLanes(DF32()));
  for (size_t q = 0; q < n_queries;) {
    const size_t g = std::min(kMaxGroup, n_queries - q);
    const float* aq = a + q * a_stride;
    float* oq = out + q * out_stride;
    if (g >= 4 && kMaxGroup >= 4) {
      DotRowsGroup<Rows, kMaxGroup>(aq, a_stride, rows, stride, n_rows, n, oq, out_stride);
    } else if (g >= 2) {
      DotRowsGroup<Rows, 2>(aq, a_stride, rows, stride, n_rows, n, oq, out_stride);
    } else {
      DotRowsGroup<Rows, 1>(aq, a_stride, rows, stride, n_rows, n, oq, out_stride);
    }
    q += g >= 4 ? kMaxGroup : g >= 2 ? 2 : 1;
  }
}

// K vectors of G queries' acc held in registers while every row passes, each
// row's vectors loaded (f16 widened) once for the G queries. With few
// vectors a second bank takes the odd rows (added in at the end), so that
// the multiply-adds are not one chain per vector; a query's chains are the
// same whatever G is.
template <class Rows, size_t K, size_t G>
HWY_INLINE void AccumulateChunk(const float* HWY_RESTRICT p, size_t p_stride, const typename Rows::T* HWY_RESTRICT rows,
                                size_t stride, size_t n_rows, float* HWY_RESTRICT acc, size_t acc_stride) {
  const DF32 df;
  const size_t N = hn::Lanes(df);
  constexpr size_t kBanks = K <= 4 ? 2 : 1;
  VF32 sums[kBanks][G][K];
  for (size_t g = 0; g < G; ++g) {
    for (size_t k = 0; k < K; ++k) {
      sums[0][g][k] = hn::LoadU(df, acc + g * acc_stride + k * N);
      if constexpr (kBanks == 2) sums[1][g][k] = hn::Zero(df);
    }
  }
  size_t j = 0;
  for (; j + kBanks <= n_rows; j += kBanks) {
    for (size_t b = 0; b < kBanks; ++b) {
      VF32 vp[G];
      for (size_t g = 0; g < G; ++g) vp[g] = hn::Set(df, p[g * p_stride + j + b]);
      const typename Rows::T* row = rows + (j + b) * stride;
      for (size_t k = 0; k < K; ++k) {
        const VF32 v = Rows::Load(row + k * N);
        for (size_t g = 0; g < G; ++g) sums[b][g][k] = hn::MulAdd(vp[g], v, sums[b][g][k]);
      }
    }
  }
  for (; j < n_rows; ++j) {
    VF32 vp[G];
    for (size_t g = 0; g < G; ++g) vp[g] = hn::Set(df, p[g * p_stride + j]);
    for (size_t k = 0; k < K; ++k) {
      const VF32 v = Rows::Load(rows + j * stride + k * N);
      for (size_t g = 0; g < G; ++g) sums[0][g][k] = hn::MulAdd(vp[g], v, sums[0][g][k]);
    }
  }
  for (size_t g = 0; g < G; ++g) {
    for (size_t k = 0; k < K; ++k) {
      if constexpr (kBanks == 2) sums[0][g][k] = hn::Add(sums[0][g][k], sums[1][g][k]);
      hn::StoreU(sums[0][g][k], df, acc + g * acc_stride + k * N);
    }
  }
}

// The queries of one chunk of K vectors, as many at once as the registers
// hold (32 vector registers on AVX-512, 16 below it).
template <class Rows, size_t K>
void AccumulateQueries(const float* HWY_RESTRICT p, size_t p_stride, size_t n_queries,
                       const typename Rows::T* HWY_RESTRICT rows, size_t stride, size_t n_rows,
                       float* HWY_RESTRICT acc, size_t acc_stride) {
  constexpr size_t kRegisters = HWY_TARGET <= HWY_AVX3 ? 24 : 12;
  constexpr size_t kBanks = K <= 4 ? 2 : 1;
  constexpr size_t kGroup = std::clamp<size_t>(kRegisters / (kBanks * K), 1, 3);
  size_t q = 0;
  for (; q + kGroup <= n_queries; q += kGroup) {
    AccumulateChunk<Rows, K, kGroup>(p + q * p_stride, p_stride, rows, stride, n_rows, acc + q * acc_stride, acc_stride);
  }
  for (; q < n_queries; ++q) AccumulateChunk<Rows, K, 1>(p + q * p_stride, p_stride, rows, stride, n_rows, acc + q * acc_stride, acc_stride);
}

template <class Rows>
void AccumulateRows(const float* HWY_RESTRICT p, size_t p_stride, size_t n_queries,
                    const typename Rows::T* HWY_RESTRICT rows, size_t stride, size_t n_rows, size_t n,
                    float* HWY_RESTRICT acc, size_t acc_stride) {
  const size_t N = hn::Lanes(DF32());
  size_t i = 0;
  for (; i + 8 * N <= n; i += 8 * N) AccumulateQueries<Rows, 8>(p, p_stride, n_queries, rows + i, stride, n_rows, acc + i, acc_stride);
  if (i + 4 * N <= n) AccumulateQueries<Rows, 4>(p, p_stride, n_queries, rows + i, stride, n_rows, acc + i, acc_stride), i += 4 * N;
  if (i + 2 * N <= n) AccumulateQueries<Rows, 2>(p, p_stride, n_queries, rows + i, stride, n_rows, acc + i, acc_stride), i += 2 * N;
  if (i + N <= n) AccumulateQueries<Rows, 1>(p, p_stride, n_queries, rows + i, stride, n_rows, acc + i, acc_stride), i += N;
  for (size_t q = 0; q < n_queries; ++q) {
    for (size_t k = i; k < n; ++k) {
      float& x = acc[q * acc_stride + k];
      for (size_t j = 0; j < n_rows; ++j) x = std::fma(p[q * p_stride + j], Rows::Scalar(rows[j * stride + k]), x);
    }
  }
}

#endif  // HWY_TARGET == HWY_SCALAR

void DotRowsF32(const float* a, size_t a_stride, size_t n_queries, const float* rows, size_t stride, size_t n_rows,
                size_t n, float* out, size_t out_stride) {
  DotRows<RowsF32>(a, a_stride, n_queries, rows, stride, n_rows, n, out, out_stride);
}
void DotRowsF16(const float* a, size_t a_stride, size_t n_queries, const uint16_t* rows, size_t stride, size_t n_rows,
                size_t n, float* out, size_t out_stride) {
  DotRows<RowsF16>(a, a_stride, n_queries, rows, stride, n_rows, n, out, out_stride);
}
void AccumulateRowsF32(const float* p, size_t p_stride, size_t n_queries, const float* rows, size_t stride,
                       size_t n_rows, size_t n, float* acc, size_t acc_stride) {
  AccumulateRows<RowsF32>(p, p_stride, n_queries, rows, stride, n_rows, n, acc, acc_stride);
}
void AccumulateRowsF16(const float* p, size_t p_stride, size_t n_queries, const uint16_t* rows, size_t stride,
                       size_t n_rows, size_t n, float* acc, size_t acc_stride) {
  AccumulateRows<RowsF16>(p, p_stride, n_queries, rows, stride, n_rows, n, acc, acc_stride);
}

// x[i] = exp(x[i] - shift); returns the sum of the new x, lanes first (a
// fixed order for a target).
float ExpShiftSum(float* HWY_RESTRICT x, size_t n, float shift) {
  const DF32 df;
  const size_t N = hn::Lanes(df);
  const VF32 vshift = hn::Set(df, shift);
  VF32 sum = hn::Zero(df);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const VF32 e = hn::Exp(df, hn::Sub(hn::LoadU(df, x + i), vshift));
    hn::StoreU(e, df, x + i);
    sum = hn::Add(sum, e);
  }
  if (i < n) {
    // A tail padded with -inf, whose exp adds zero.
    HWY_ALIGN float tail[hn::MaxLanes(df)];
    for (size_t k = 0; k < N; ++k) tail[k] = i + k < n ? x[i + k] : -INFINITY;
    const VF32 e = hn::Exp(df, hn::Sub(hn::Load(df, tail), vshift));
    hn::Store(e, df, tail);
    for (size_t k = i; k < n; ++k) x[k] = tail[k - i];
    sum = hn::Add(sum, e);
  }
  return hn::GetLane(hn::SumOfLanes(df, sum));
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

// d * q in vector lanes (exact: an 11-bit significand times an 8-bit
// integer), the block's scale widened once per block.
void DequantizeQ8_0Rows(const quant::BlockQ8_0* HWY_RESTRICT rows, size_t stride, size_t n_rows, size_t n,
                        float* HWY_RESTRICT out) {
  const DF32 df;
  const hn::Rebind<int8_t, DF32> d8;
  const hn::RebindToSigned<DF32> di;
  constexpr size_t N = hn::MaxLanes(DF32());
  static_assert(quant::kQK % N == 0, "a vector never crosses a block");
  for (size_t r = 0; r < n_rows; ++r) {
    const quant::BlockQ8_0* row = rows + r * stride;
    float* o = out + r * n;
    for (size_t b = 0; b < n / quant::kQK; ++b) {
      const VF32 scale = hn::Set(df, quant::f16_to_f32(row[b].d));
      for (size_t j = 0; j < static_cast<size_t>(quant::kQK); j += N) {
        const VF32 q = hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, row[b].qs + j)));
        hn::StoreU(hn::Mul(q, scale), df, o + b * quant::kQK + j);
      }
    }
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
#include <type_traits>

namespace lamina::model::cpu {
HWY_EXPORT(DotRowsF32);
HWY_EXPORT(DotRowsF16);
HWY_EXPORT(AccumulateRowsF32);
HWY_EXPORT(AccumulateRowsF16);
HWY_EXPORT(ExpShiftSum);
HWY_EXPORT(F32ToF16Row);
HWY_EXPORT(F16ToF32Row);
HWY_EXPORT(DequantizeQ8_0Rows);
HWY_EXPORT(SiluMul);
HWY_EXPORT(TargetName);

template <class Row>
void dot_rows(const float* a, std::size_t a_stride, std::size_t n_queries, const Row* rows, std::size_t stride,
              std::size_t n_rows, std::size_t n, float* out, std::size_t out_stride) {
  if constexpr (std::is_same_v<Row, float>) {
    HWY_DYNAMIC_DISPATCH(DotRowsF32)(a, a_stride, n_queries, rows, stride, n_rows, n, out, out_stride);
  } else {
    HWY_DYNAMIC_DISPATCH(DotRowsF16)(a, a_stride, n_queries, rows, stride, n_rows, n, out, out_stride);
  }
}
template <class Row>
void accumulate_rows(const float* p, std::size_t p_stride, std::size_t n_queries, const Row* rows, std::size_t stride,
                     std::size_t n_rows, std::size_t n, float* acc, std::size_t acc_stride) {
  if constexpr (std::is_same_v<Row, float>) {
    HWY_DYNAMIC_DISPATCH(AccumulateRowsF32)(p, p_stride, n_queries, rows, stride, n_rows, n, acc, acc_stride);
  } else {
    HWY_DYNAMIC_DISPATCH(AccumulateRowsF16)(p, p_stride, n_queries, rows, stride, n_rows, n, acc, acc_stride);
  }
}
template void dot_rows(const float*, std::size_t, std::size_t, const float*, std::size_t, std::size_t, std::size_t,
                       float*, std::size_t);
template void dot_rows(const float*, std::size_t, std::size_t, const uint16_t*, std::size_t, std::size_t,
                       std::size_t, float*, std::size_t);
template void accumulate_rows(const float*, std::size_t, std::size_t, const float*, std::size_t, std::size_t,
                              std::size_t, float*, std::size_t);
template void accumulate_rows(const float*, std::size_t, std::size_t, const uint16_t*, std::size_t, std::size_t,
                              std::size_t, float*, std::size_t);
float exp_shift_sum(float* x, std::size_t n, float shift) { return HWY_DYNAMIC_DISPATCH(ExpShiftSum)(x, n, shift); }
void f32_to_f16_row(const float* x, uint16_t* out, std::size_t n) { HWY_DYNAMIC_DISPATCH(F32ToF16Row)(x, out, n); }
void f16_to_f32_row(const uint16_t* x, float* out, std::size_t n) { HWY_DYNAMIC_DISPATCH(F16ToF32Row)(x, out, n); }
void dequantize_q8_0_rows(const quant::BlockQ8_0* rows, std::size_t stride, std::size_t n_rows, std::size_t n,
                          float* out) {
  HWY_DYNAMIC_DISPATCH(DequantizeQ8_0Rows)(rows, stride, n_rows, n, out);
}
void silu_mul(const float* gate, const float* up, float* out, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(SiluMul)(gate, up, out, n);
}
const char* vector_kernels_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

namespace scalar {
namespace {
double widen(float x) { return x; }
double widen(uint16_t h) { return quant::f16_to_f32(h); }

}  // namespace

template <class Row>
void dot_rows(const float* a, const Row* rows, std::size_t stride, std::size_t n_rows, std::size_t n, double* out) {
  for (std::size_t r = 0; r < n_rows; ++r) {
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * widen(rows[r * stride + i]);
    out[r] = sum;
  }
}
template <class Row>
void accumulate_rows(const float* p, const Row* rows, std::size_t stride, std::size_t n_rows, std::size_t n,
                     double* acc) {
  for (std::size_t r = 0; r < n_rows; ++r) {
    for (std::size_t i = 0; i < n; ++i) acc[i] += static_cast<double>(p[r]) * widen(rows[r * stride + i]);
  }
}
template void dot_rows(const float*, const float*, std::size_t, std::size_t, std::size_t, double*);
template void dot_rows(const float*, const uint16_t*, std::size_t, std::size_t, std::size_t, double*);
template void accumulate_rows(const float*, const float*, std::size_t, std::size_t, std::size_t, double*);
template void accumulate_rows(const float*, const uint16_t*, std::size_t, std::size_t, std::size_t, double*);

double exp_shift_sum(const float* x, std::size_t n, float shift, double* out) {
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) sum += out[i] = std::exp(static_cast<double>(x[i]) - shift);
  return sum;
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

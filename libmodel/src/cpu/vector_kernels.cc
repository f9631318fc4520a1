// Highway per-target bodies of vector_kernels.h, and their scalar forms.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "vector_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "vector_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::model::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Doubles per vector, and f32 lanes widened to them (the lower half).
using DD = hn::ScalableTag<double>;
using DF = hn::Rebind<float, DD>;

// The 8 partial sums of dot_f64 as 8 / Lanes(DD) vectors (lane j of vector
// v is sum v * Lanes + j), so every target adds the same products into the
// same sums.
constexpr size_t kSums = 8;

double DotF64(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, size_t n) {
  const DD dd;
  const DF df;
  constexpr size_t kMaxVectors = kSums;  // at least one double per vector
  const size_t N = hn::Lanes(dd);
  const size_t vectors = kSums / N;
  hn::Vec<DD> sums[kMaxVectors];
  for (size_t v = 0; v < vectors; ++v) sums[v] = hn::Zero(dd);
  size_t i = 0;
  for (; i + kSums <= n; i += kSums) {
    for (size_t v = 0; v < vectors; ++v) {
      const auto x = hn::PromoteTo(dd, hn::LoadU(df, a + i + v * N));
      const auto y = hn::PromoteTo(dd, hn::LoadU(df, b + i + v * N));
      sums[v] = hn::Add(sums[v], hn::Mul(x, y));
    }
  }
  HWY_ALIGN double lanes[kSums];
  for (size_t v = 0; v < vectors; ++v) hn::Store(sums[v], dd, lanes + v * N);
  // The tail goes into sums 0, 1, ... as the scalar loop adds it.
  for (size_t l = 0; i < n; ++i, ++l) lanes[l] += static_cast<double>(a[i]) * b[i];
  double total = 0.0;
  for (double s : lanes) total += s;
  return total;
}

void AddScaledF64(double p, const float* HWY_RESTRICT x, double* HWY_RESTRICT acc, size_t n) {
  const DD dd;
  const DF df;
  const size_t N = hn::Lanes(dd);
  const auto vp = hn::Set(dd, p);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::PromoteTo(dd, hn::LoadU(df, x + i));
    hn::StoreU(hn::Add(hn::LoadU(dd, acc + i), hn::Mul(vp, v)), dd, acc + i);
  }
  for (; i < n; ++i) acc[i] += p * x[i];
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
HWY_EXPORT(DotF64);
HWY_EXPORT(AddScaledF64);
HWY_EXPORT(SiluMul);
HWY_EXPORT(TargetName);

double dot_f64(const float* a, const float* b, std::size_t n) { return HWY_DYNAMIC_DISPATCH(DotF64)(a, b, n); }
void add_scaled_f64(double p, const float* x, double* acc, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(AddScaledF64)(p, x, acc, n);
}
void silu_mul(const float* gate, const float* up, float* out, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(SiluMul)(gate, up, out, n);
}
const char* vector_kernels_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

namespace scalar {
double dot_f64(const float* a, const float* b, std::size_t n) {
  constexpr std::size_t kLanes = 8;
  double lanes[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(a[i + l]) * b[i + l];
  }
  for (std::size_t l = 0; i < n; ++i, ++l) lanes[l] += static_cast<double>(a[i]) * b[i];
  double sum = 0.0;
  for (double v : lanes) sum += v;
  return sum;
}
void add_scaled_f64(double p, const float* x, double* acc, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) acc[i] += p * x[i];
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

// Matmul of the 256-value super-block weight formats, compiled once per
// target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "matmul_kquants.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "matmul_families.h"
#include "simd_dot_kquants-inl.h"
#include "simd_dot_kquants_avx3dl-inl.h"
#include "simd_matmul_tiles-inl.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {

// AVX3_DL has kernels of its own (several blocks per 512-bit step); every
// other target runs the portable ones.
#if HWY_TARGET == HWY_AVX3_DL
namespace kernels = dl;
#else
namespace kernels = portable;
#endif

template <class Kernel>
void RunKQuant(const void* w, size_t n_out, size_t n_in, const QuantizedActivations& x, float* y,
               ThreadPool& pool) {
  // Per value: 1 byte, plus a scale and 16 bsums per 256 values.
  const size_t chunk = detail::activation_rows_per_pass(n_in + n_in / 4);
  const auto rows = [&](size_t begin, size_t end) {
    MatMulRows<Kernel>(w, n_in / kQK_K, n_out, begin, end, x, chunk, y);
  };
  detail::split_output_rows(pool, n_out, x.rows(), rows);
}

void MatMulKQuants(QuantFormat format, const void* w, size_t n_out, size_t n_in,
                   const QuantizedActivations& x, float* y, ThreadPool& pool) {
  switch (format) {
    case QuantFormat::Q2_K: return RunKQuant<kernels::KernelQ2_K>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q3_K: return RunKQuant<kernels::KernelQ3_K>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q4_K: return RunKQuant<kernels::KernelQ4_K>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q5_K: return RunKQuant<kernels::KernelQ5_K>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q6_K: return RunKQuant<kernels::KernelQ6_K>(w, n_out, n_in, x, y, pool);
    case QuantFormat::IQ4_XS: return RunKQuant<kernels::KernelIQ4_XS>(w, n_out, n_in, x, y, pool);
    default: return;  // the caller only passes the formats above
  }
}

}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lamina::quant {
HWY_EXPORT(MatMulKQuants);

void detail::matmul_kquants(QuantFormat format, const void* w, size_t n_out, size_t n_in,
                            const QuantizedActivations& x, float* y, ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(MatMulKQuants)(format, w, n_out, n_in, x, y, pool);
}
}  // namespace lamina::quant
#endif  // HWY_ONCE

// Matmul of the 32-value-block weight formats, compiled once per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "matmul_q32.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "matmul_families.h"
#include "simd_dot_q32-inl.h"
#include "simd_dot_q32_avx3dl-inl.h"
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
void RunQ32(const void* w, size_t n_out, size_t n_in, const QuantizedActivations& x, float* y,
            ThreadPool& pool) {
  // Per value: 1 byte, plus 3 x 16 bytes of lanes per 32 values.
  const size_t chunk = detail::activation_rows_per_pass(n_in * 5 / 2);
  const auto rows = [&](size_t begin, size_t end) {
    MatMulRows<Kernel>(w, n_in / kQK, n_out, begin, end, x, chunk, y);
  };
  detail::split_output_rows(pool, n_out, x.rows(), rows);
}

void MatMulQ32(QuantFormat format, const void* w, size_t n_out, size_t n_in,
               const QuantizedActivations& x, float* y, ThreadPool& pool) {
  switch (format) {
    case QuantFormat::Q4_0: return RunQ32<kernels::KernelQ4_0>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q4_1: return RunQ32<kernels::KernelQ4_1>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q5_0: return RunQ32<kernels::KernelQ5_0>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q5_1: return RunQ32<kernels::KernelQ5_1>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q8_0: return RunQ32<kernels::KernelQ8_0>(w, n_out, n_in, x, y, pool);
    case QuantFormat::IQ4_NL: return RunQ32<kernels::KernelIQ4_NL>(w, n_out, n_in, x, y, pool);
    case QuantFormat::MXFP4: return RunQ32<kernels::KernelMXFP4>(w, n_out, n_in, x, y, pool);
    default: return;  // the caller only passes the formats above
  }
}

}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lamina::quant {
HWY_EXPORT(MatMulQ32);

void detail::matmul_q32(QuantFormat format, const void* w, size_t n_out, size_t n_in,
                        const QuantizedActivations& x, float* y, ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(MatMulQ32)(format, w, n_out, n_in, x, y, pool);
}
}  // namespace lamina::quant
#endif  // HWY_ONCE

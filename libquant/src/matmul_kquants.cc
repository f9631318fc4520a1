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

// AVX3_DL has kernels of its own (64 values per 512-bit op); every other
// target runs the portable ones.

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

template <class Kernels>
void MatMulKQuantsWith(QuantFormat format, const void* w, size_t n_out, size_t n_in,
                       const QuantizedActivations& x, float* y, ThreadPool& pool) {
  switch (format) {
    case QuantFormat::Q2_K: return RunKQuant<typename Kernels::Q2_K>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q3_K: return RunKQuant<typename Kernels::Q3_K>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q4_K: return RunKQuant<typename Kernels::Q4_K>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q5_K: return RunKQuant<typename Kernels::Q5_K>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q6_K: return RunKQuant<typename Kernels::Q6_K>(w, n_out, n_in, x, y, pool);
    case QuantFormat::IQ4_XS: return RunKQuant<typename Kernels::IQ4_XS>(w, n_out, n_in, x, y, pool);
    default: return;  // the caller only passes the formats above
  }
}

struct PortableKernels {
  using Q2_K = portable::KernelQ2_K;
  using Q3_K = portable::KernelQ3_K;
  using Q4_K = portable::KernelQ4_K;
  using Q5_K = portable::KernelQ5_K;
  using Q6_K = portable::KernelQ6_K;
  using IQ4_XS = portable::KernelIQ4_XS;
};

void MatMulKQuants(QuantFormat format, const void* w, size_t n_out, size_t n_in,
                   const QuantizedActivations& x, float* y, ThreadPool& pool) {
#if HWY_TARGET == HWY_AVX3_DL
  // The AVX3_DL kernels unpack bits with GFNI, which Highway's AVX3_DL
  // does not guarantee (every CPU with the rest of AVX3_DL has it; a
  // virtual machine may hide it).
  struct FastKernels {
    using Q2_K = dl::KernelQ2_K;
    using Q3_K = dl::KernelQ3_K;
    using Q4_K = dl::KernelQ4_K;
    using Q5_K = dl::KernelQ5_K;
    using Q6_K = dl::KernelQ6_K;
    using IQ4_XS = dl::KernelIQ4_XS;
  };
  if (dl::CpuHasGfni()) return MatMulKQuantsWith<FastKernels>(format, w, n_out, n_in, x, y, pool);
#endif
  MatMulKQuantsWith<PortableKernels>(format, w, n_out, n_in, x, y, pool);
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

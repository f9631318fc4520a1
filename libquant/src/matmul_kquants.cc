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

// The kernels of Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS, in that order.
template <class Q2, class Q3, class Q4, class Q5, class Q6, class IQ4XS>
void MatMulKQuantsWith(QuantFormat format, const void* w, size_t n_out, size_t n_in,
                       const QuantizedActivations& x, float* y, ThreadPool& pool) {
  switch (format) {
    case QuantFormat::Q2_K: return RunKQuant<Q2>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q3_K: return RunKQuant<Q3>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q4_K: return RunKQuant<Q4>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q5_K: return RunKQuant<Q5>(w, n_out, n_in, x, y, pool);
    case QuantFormat::Q6_K: return RunKQuant<Q6>(w, n_out, n_in, x, y, pool);
    case QuantFormat::IQ4_XS: return RunKQuant<IQ4XS>(w, n_out, n_in, x, y, pool);
    default: return;  // the caller only passes the formats above
  }
}

void MatMulKQuants(QuantFormat format, const void* w, size_t n_out, size_t n_in,
                   const QuantizedActivations& x, float* y, ThreadPool& pool) {
#if HWY_TARGET == HWY_AVX3_DL
  // AVX3_DL has kernels of its own (64 values per 512-bit op); every other
  // target runs the portable ones. They unpack bits with GFNI, which
  // Highway's AVX3_DL does not guarantee (every CPU with the rest of
  // AVX3_DL has it; a virtual machine may hide it).
  if (dl::CpuHasGfni()) {
    return MatMulKQuantsWith<dl::KernelQ2_K, dl::KernelQ3_K, dl::KernelQ4_K, dl::KernelQ5_K, dl::KernelQ6_K,
                             dl::KernelIQ4_XS>(format, w, n_out, n_in, x, y, pool);
  }
#endif
  MatMulKQuantsWith<portable::KernelQ2_K, portable::KernelQ3_K, portable::KernelQ4_K, portable::KernelQ5_K,
                    portable::KernelQ6_K, portable::KernelIQ4_XS>(format, w, n_out, n_in, x, y, pool);
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

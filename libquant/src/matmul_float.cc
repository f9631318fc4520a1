// Matmul of F32, F16 and BF16 weights with f32 activations, compiled once
// per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "matmul_float.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "matmul_families.h"
#include "simd_dot_float-inl.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {

template <class Weights>
void RunFloat(const void* w, size_t n_out, size_t n_in, const float* x, size_t x_stride,
              size_t n_rows, float* y, ThreadPool& pool) {
  const size_t chunk = detail::activation_rows_per_pass(n_in * sizeof(float));
  const auto rows = [&](size_t begin, size_t end) {
    fl::MatMulRows<Weights>(w, n_in, n_out, begin, end, x, x_stride, n_rows, chunk, y);
  };
  detail::split_output_rows(pool, n_out, n_rows, rows);
}

void MatMulFloat(QuantFormat format, const void* w, size_t n_out, size_t n_in, const float* x,
                 size_t x_stride, size_t n_rows, float* y, ThreadPool& pool) {
  switch (format) {
    case QuantFormat::F32: return RunFloat<fl::WeightsF32>(w, n_out, n_in, x, x_stride, n_rows, y, pool);
    case QuantFormat::F16: return RunFloat<fl::WeightsF16>(w, n_out, n_in, x, x_stride, n_rows, y, pool);
    case QuantFormat::BF16:
      return RunFloat<fl::WeightsBF16>(w, n_out, n_in, x, x_stride, n_rows, y, pool);
    default: return;  // the caller only passes the formats above
  }
}

}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lamina::quant {
HWY_EXPORT(MatMulFloat);

void detail::matmul_float(QuantFormat format, const void* w, size_t n_out, size_t n_in,
                          const float* x, size_t x_stride, size_t n_rows, float* y,
                          ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(MatMulFloat)(format, w, n_out, n_in, x, x_stride, n_rows, y, pool);
}
}  // namespace lamina::quant
#endif  // HWY_ONCE

// Reference dot products: dequantize, then multiply and sum in double. The
// products of two f32 values are exact in double, so only the summation
// rounds, and the result is independent of any kernel's blocking.
#include <vector>

#include "lamina/quant/reference.h"

namespace lamina::quant {
namespace {

double dot_f64(const float* a, const float* b, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return sum;
}

}  // namespace

double dot_ref(QuantFormat wfmt, const void* wrow, const float* x, size_t n) {
  std::vector<float> w(n);
  dequantize_row_ref(wfmt, wrow, w.data(), n);
  return dot_f64(w.data(), x, n);
}

double dot_quantized_ref(QuantFormat wfmt, const void* wrow, const void* act_row, size_t n) {
  std::vector<float> w(n);
  std::vector<float> a(n);
  dequantize_row_ref(wfmt, wrow, w.data(), n);
  dequantize_row_ref(format_traits(wfmt).activation, act_row, a.data(), n);
  return dot_f64(w.data(), a.data(), n);
}

}  // namespace lamina::quant

// Builds against an installed libquant through pkg-config only: quantizes a
// small Q8_0 matrix, multiplies it with the SIMD kernels (the CPU's best
// target, picked at run time) and checks the products against the scalar
// reference dot products.
#include <lamina/quant/format.h>
#include <lamina/quant/kernels.h>
#include <lamina/quant/reference.h>
#include <lamina/quant/thread_pool.h>

#include <cmath>
#include <cstddef>
#include <iostream>
#include <vector>

int main() {
  using lamina::quant::QuantFormat;
  constexpr size_t n_out = 4, n_in = 128;
  const QuantFormat format = QuantFormat::Q8_0;
  const size_t row_bytes = lamina::quant::row_bytes(format, n_in);
  std::vector<float> w(n_out * n_in), x(n_in);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * static_cast<float>(i));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.11f * static_cast<float>(i));
  std::vector<unsigned char> wq(n_out * row_bytes);
  for (size_t o = 0; o < n_out; ++o) lamina::quant::quantize_row_ref(format, &w[o * n_in], &wq[o * row_bytes], n_in);

  const QuantFormat act_format = lamina::quant::kernel_activation_format(format);
  std::vector<unsigned char> xq(lamina::quant::row_bytes(act_format, n_in));
  lamina::quant::quantize_row_ref(act_format, x.data(), xq.data(), n_in);

  lamina::quant::ThreadPool pool(2);
  std::vector<float> y(n_out);
  lamina::quant::matvec(format, wq.data(), n_out, n_in, x.data(), y.data(), pool);
  for (size_t o = 0; o < n_out; ++o) {
    const double ref = lamina::quant::dot_quantized_ref(format, &wq[o * row_bytes], xq.data(), n_in);
    // The kernel scales and sums the exact integer block dots in f32.
    if (std::fabs(y[o] - ref) > 1e-5 * (std::fabs(ref) + 1.0)) {
      std::cerr << "row " << o << ": kernel " << y[o] << ", reference " << ref << "\n";
      return 1;
    }
  }
  std::cout << n_out << " Q8_0 rows match the reference on target " << lamina::quant::kernel_target_name() << "\n";
  return 0;
}

// SIMD loops of the CPU forward pass outside the matrix products (Highway,
// dispatched to the best target once per call). Each has the numerics of the
// plain loop it replaces, noted below; the scalar forms live beside them in
// vector_kernels.cc and the tests compare the two on every target.
#pragma once

#include <cstddef>

namespace lamina::model::cpu {

// sum a[i] * b[i] in double: 8 interleaved partial sums (element i into sum
// i % 8, products and additions rounded separately), then added in order
// 0..7. Bit-identical on every target.
double dot_f64(const float* a, const float* b, std::size_t n);

// acc[i] += p * x[i] in double (product and addition rounded separately).
// Bit-identical on every target.
void add_scaled_f64(double p, const float* x, double* acc, std::size_t n);

// out[i] = float(g / (1 + exp(-g))) * up[i] with g = gate[i] in double: the
// SiLU-gated product of the FFN. exp is Highway's (within 1 ulp in double of
// the correctly rounded value), so a result may differ from the scalar
// form's in the last bit, rarely.
void silu_mul(const float* gate, const float* up, float* out, std::size_t n);

namespace scalar {
double dot_f64(const float* a, const float* b, std::size_t n);
void add_scaled_f64(double p, const float* x, double* acc, std::size_t n);
void silu_mul(const float* gate, const float* up, float* out, std::size_t n);
}  // namespace scalar

// Name of the Highway target these run on now.
const char* vector_kernels_target();

}  // namespace lamina::model::cpu

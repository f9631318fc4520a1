// SIMD loops of the CPU forward pass outside the matrix products (Highway,
// dispatched to the best target once per call). Each has the numerics of the
// plain loop it replaces, noted below; the scalar forms live beside them in
// vector_kernels.cc and the tests compare the two on every target.
//
// The attention loops read KV rows as f32 or as f16 (IEEE binary16 bits, as
// the cache stores them); f16 is widened in registers, exactly, so a row
// gives the same result in either form once rounded to f16.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lamina/quant/blocks.h"

namespace lamina::model::cpu {

// The attention's loops, in f32 with fused multiply-adds. Each result is
// computed alone, in an order fixed for the target (never by n_rows or by
// what else runs), so attention stays independent of the batch. The scalar
// forms compute the exact sums in double (the 1-lane baseline target runs
// them, rounded to f32); the tests bound the difference by the f32 rounding
// error those sums can carry.

// Row: float (rows of an f32 cache) or uint16_t (f16 bits). Several queries
// (the heads sharing a KV head) pass over the same rows in one call, each row
// loaded once for a few of them; each query's results are the bits it gets
// alone.
// out[q * out_stride + r] = sum a_q[i] * row_r[i], a_q = a + q * a_stride,
// row_r = rows + r * stride, for q < n_queries, r < n_rows.
template <class Row>
void dot_rows(const float* a, std::size_t a_stride, std::size_t n_queries, const Row* rows, std::size_t stride,
              std::size_t n_rows, std::size_t n, float* out, std::size_t out_stride);

// acc_q[i] += sum over r < n_rows of p_q[r] * row_r[i], acc_q = acc + q * acc_stride,
// p_q = p + q * p_stride, for q < n_queries.
template <class Row>
void accumulate_rows(const float* p, std::size_t p_stride, std::size_t n_queries, const Row* rows, std::size_t stride,
                     std::size_t n_rows, std::size_t n, float* acc, std::size_t acc_stride);

// x[i] = exp(x[i] - shift) (Highway's exp, within a few ulp); returns the sum of the new x.
float exp_shift_sum(float* x, std::size_t n, float shift);

// f32 <-> f16 (round to nearest, ties to even; inf and nan kept, nan made
// quiet), as lamina/quant/half.h converts one value. Bit-identical on every
// target.
void f32_to_f16_row(const float* x, uint16_t* out, std::size_t n);
void f16_to_f32_row(const uint16_t* x, float* out, std::size_t n);

// Rows of a q8_0 KV cache to f32: out[r][i] = d * q of value i of row r
// (rows `stride` blocks apart, n values each, n a multiple of 32), exact in
// f32, so bit-identical to quant::dequantize_row_ref on every target.
void dequantize_q8_0_rows(const quant::BlockQ8_0* rows, std::size_t stride, std::size_t n_rows, std::size_t n,
                          float* out);

// out[i] = float(g / (1 + exp(-g))) * up[i] with g = gate[i] in double: the
// SiLU-gated product of the FFN. exp is Highway's (within 1 ulp in double of
// the correctly rounded value), so a result may differ from the scalar
// form's in the last bit, rarely.
void silu_mul(const float* gate, const float* up, float* out, std::size_t n);

// The slow, obvious forms the tests hold the SIMD ones to.
namespace scalar {
template <class Row>
void dot_rows(const float* a, const Row* rows, std::size_t stride, std::size_t n_rows, std::size_t n, double* out);
template <class Row>
void accumulate_rows(const float* p, const Row* rows, std::size_t stride, std::size_t n_rows, std::size_t n,
                     double* acc);
// out[i] = exp(x[i] - shift) in double; returns their sum.
double exp_shift_sum(const float* x, std::size_t n, float shift, double* out);
void f32_to_f16_row(const float* x, uint16_t* out, std::size_t n);
void f16_to_f32_row(const uint16_t* x, float* out, std::size_t n);
void silu_mul(const float* gate, const float* up, float* out, std::size_t n);
}  // namespace scalar

// Name of the Highway target these run on now.
const char* vector_kernels_target();

}  // namespace lamina::model::cpu

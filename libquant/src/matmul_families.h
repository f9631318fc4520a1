// Internal: one dynamically dispatched matmul entry per family of weight
// formats (each family is a translation unit compiled for every target).
#pragma once

#include <cstddef>

#include "lamina/quant/activations.h"
#include "lamina/quant/format.h"
#include "lamina/quant/thread_pool.h"

namespace lamina::quant::detail {

// F32, F16, BF16 weights; x holds n_rows rows of n_in floats, x_stride apart.
void matmul_float(QuantFormat weight_format, const void* w, size_t n_out, size_t n_in,
                  const float* x, size_t x_stride, size_t n_rows, float* y, ThreadPool& pool);

// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL weights.
void matmul_q32(QuantFormat weight_format, const void* w, size_t n_out, size_t n_in,
                const QuantizedActivations& x, float* y, ThreadPool& pool);

// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS weights.
void matmul_kquants(QuantFormat weight_format, const void* w, size_t n_out, size_t n_in,
                    const QuantizedActivations& x, float* y, ThreadPool& pool);

// Output rows per unit of work split between threads.
inline constexpr size_t kOutputGranule = 16;

// Runs rows(begin, end) over [0, n_out) on the pool's threads. One
// activation row (decode) streams each thread's contiguous share of the
// weights (faster than taking ranges in turn); several rows are compute
// bound, and ranges taken in turn keep both threads busy to the end. Either
// way every output is computed by the same operations.
template <class Rows>
void split_output_rows(ThreadPool& pool, size_t n_out, size_t n_activation_rows, const Rows& rows) {
  if (n_activation_rows == 1) {
    pool.parallel_for(n_out, kOutputGranule, rows);
  } else {
    pool.parallel_for_dynamic(n_out, kOutputGranule, rows);
  }
}

// Activation rows per pass over a thread's weight rows: as many as fit in
// about half of a 1 MiB L2 (at least one register tile of 4), so that they
// stay cached while the weights stream through once per pass.
inline size_t activation_rows_per_pass(size_t bytes_per_row) {
  constexpr size_t kBudget = size_t{512} << 10;
  constexpr size_t kMaxRows = 256;
  const size_t rows = kBudget / (bytes_per_row + 1);
  return rows < 4 ? 4 : rows > kMaxRows ? kMaxRows : rows / 4 * 4;
}

}  // namespace lamina::quant::detail

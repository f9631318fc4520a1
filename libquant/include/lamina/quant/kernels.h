// SIMD matrix products of GGUF-format weights with activations. The best
// target of the CPU (Highway dynamic dispatch) is chosen once per call.
#pragma once

#include <cstddef>

#include "lamina/quant/activations.h"
#include "lamina/quant/format.h"
#include "lamina/quant/thread_pool.h"
#include "lamina/quant/export.h"

namespace lamina::quant {

// The activation format the kernels pair with a weight format: F32 for
// F32/F16/BF16 weights (the weights are widened, the activations stay f32),
// else format_traits(weight_format).activation (Q8_0, Q8_1 or Q8_K).
// Throws std::invalid_argument for formats that never hold weights.
LAMINA_QUANT_API QuantFormat kernel_activation_format(QuantFormat weight_format);

// y[r * n_out + o] = dot(weight row o, activation row r) for o < n_out and
// r < x.rows(). `w` holds n_out rows of n_in values, each row_bytes(
// weight_format, n_in) long, contiguous. x must have n_in columns in
// kernel_activation_format(weight_format). Output rows are split over the
// pool's threads.
//
// Batch invariance: each value is computed by the same operations in the
// same order whatever the number of activation rows and of threads, so it
// is bit-identical across batch sizes and thread counts (on one CPU target).
// Quantized formats: the integer part of every block dot is exact; the f32
// scaling and summation of the blocks is the only rounding.
LAMINA_QUANT_API void matmul(QuantFormat weight_format, const void* w, size_t n_out, size_t n_in,
                             const QuantizedActivations& x, float* y, ThreadPool& pool);

// The same for n_rows rows of f32 activations (row-major, n_in each),
// quantized first when the weight format needs it. To reuse quantized
// activations for several weight matrices, use quantize_activations and
// the overload above.
LAMINA_QUANT_API void matmul(QuantFormat weight_format, const void* w, size_t n_out, size_t n_in, const float* x,
                             size_t n_rows, float* y, ThreadPool& pool);

// One activation row (the decode step): y[o] = dot(weight row o, x).
inline void matvec(QuantFormat weight_format, const void* w, size_t n_out, size_t n_in,
                   const float* x, float* y, ThreadPool& pool) {
  matmul(weight_format, w, n_out, n_in, x, 1, y, pool);
}

// Name of the Highway target the kernels run on now (e.g. "AVX3_DL").
LAMINA_QUANT_API const char* kernel_target_name();

}  // namespace lamina::quant

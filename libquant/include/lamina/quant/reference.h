// Scalar reference quantization, dequantization and dot products.
// Slow and obvious on purpose: the SIMD kernels are tested against these.
#pragma once

#include <cstddef>

#include "lamina/quant/format.h"
#include "lamina/quant/export.h"

namespace lamina::quant {

// Converts one row of n values in `format` (n a multiple of the block size)
// to f32, bit-exact with ggml's dequantizers.
LAMINA_QUANT_API void dequantize_row_ref(QuantFormat format, const void* src, float* dst, size_t n);

// Quantizes one row of n f32 values into `format` (every format, including
// the activation formats Q8_0, Q8_1 and Q8_K). Round-to-nearest formats are
// byte-exact with ggml; the K-quants and IQ4 formats search their scales.
LAMINA_QUANT_API void quantize_row_ref(QuantFormat format, const float* src, void* dst, size_t n);

// sum_i dequant(wrow)[i] * x[i], accumulated in double.
LAMINA_QUANT_API double dot_ref(QuantFormat wfmt, const void* wrow, const float* x, size_t n);

// Exact double dot of dequant(wrow) with dequant(act_row), where act_row is
// in format_traits(wfmt).activation.
LAMINA_QUANT_API double dot_quantized_ref(QuantFormat wfmt, const void* wrow, const void* act_row, size_t n);

}  // namespace lamina::quant

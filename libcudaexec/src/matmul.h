// GPU matrix products of GGUF-format weights with activation rows, and the
// conversions around them (internal to libcudaexec; device pointers).
//
// Numerics follow libquant's kernels: quantized weights meet activations
// quantized to their pairing format (Q8_0, Q8_1 or Q8_K, blocks byte-identical
// to quant::quantize_row_ref), the integer part of every block dot is exact,
// and only the f32 scaling and summation of the blocks rounds; F32/F16/BF16
// weights meet f32 activations.
//
// Batch invariance: the value of output (r, o) is computed by the same
// operations in the same order whatever n_rows is.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "lamina/quant/format.h"

namespace lamina::cudaexec::detail {

using quant::QuantFormat;

// The activation format a weight format is dotted against (as libquant's
// kernel_activation_format: F32 for the float formats).
QuantFormat activation_format(QuantFormat weight_format);

// Bytes of one activation row of n_in values in `act_format` (a multiple of
// 16, so rows can be laid out back to back with aligned starts).
std::size_t activation_row_stride(QuantFormat act_format, uint32_t n_in);

// Converts n_rows rows of f32 (row r at x + r * x_stride) into act_format
// rows at out + r * activation_row_stride(act_format, n_in). For F32 this
// copies. Blocks equal quant::quantize_row_ref's byte for byte.
void quantize_activations(QuantFormat act_format, const float* x, std::size_t x_stride, uint32_t n_in,
                          uint32_t n_rows, void* out, cudaStream_t stream);

struct MatmulArgs {
  QuantFormat format = QuantFormat::F32;  // weight format
  const void* w = nullptr;                // n_out rows of row_bytes(format, n_in), contiguous
  uint32_t n_in = 0;
  uint32_t n_out = 0;
  const void* act = nullptr;  // n_rows rows in activation_format(format), activation_row_stride apart
  uint32_t n_rows = 0;
  float* y = nullptr;         // y[r * y_stride + o]
  std::size_t y_stride = 0;
  const float* bias = nullptr;      // optional: + bias[o]
  const float* residual = nullptr;  // optional: + residual[r * y_stride + o] (may equal y)
  std::size_t act_stride = 0;       // bytes between activation rows; 0: activation_row_stride
  // n_batch products in one launch (the matrices of a stack), each the same
  // bits as its own matmul: product b reads w + b * w_batch_bytes, act + b *
  // act_batch_bytes and bias + b * bias_batch_stride, and writes y + b *
  // y_batch_stride. No residual with n_batch > 1.
  uint32_t n_batch = 1;
  std::size_t w_batch_bytes = 0, act_batch_bytes = 0, y_batch_stride = 0, bias_batch_stride = 0;
  // Grouped (with n_batch > 1; device, n_batch + 1 offsets, written by an
  // earlier kernel): product b takes activation rows [batch_rows[b],
  // batch_rows[b + 1]) and writes the same rows of y; n_rows is then the
  // most rows one product may have. The experts of a mixture, each on the
  // rows routed to it, without the host knowing how many.
  const uint32_t* batch_rows = nullptr;
};

// y = W x (+ bias) (+ residual) for every activation row. Throws CudaError for
// a format without a kernel.
void matmul(const MatmulArgs& args, cudaStream_t stream);

// The products of up to kMaxMatmulGroup matrices on the same activation
// rows (Q/K/V, gate/up), each output bit-identical to matmul(args[i]).
// For now one launch per matrix (in order, on `stream`): a single-launch
// version measured slower than separate launches (libcudaexec/bench/NOTES.md),
// so callers get the interface and the fusion can come later unchanged.
inline constexpr int kMaxMatmulGroup = 4;
void matmul_group(const MatmulArgs* args, int n, cudaStream_t stream);

// out[r * n_cols + i] = row ids[r] of `w` (format, n_cols values per row)
// dequantized to f32, times `scale`; ids is a device array of n_rows ids.
void gather_rows(QuantFormat format, const void* w, uint32_t n_cols, const int32_t* ids, uint32_t n_rows,
                 float scale, float* out, cudaStream_t stream);

}  // namespace lamina::cudaexec::detail

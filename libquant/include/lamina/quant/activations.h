// Activation rows prepared for the matmul kernels: quantized once, then
// reused against any number of weight matrices (e.g. Q, K and V).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "lamina/quant/format.h"

namespace lamina::quant {

class ThreadPool;
namespace detail {
struct ActivationsAccess;
}

class QuantizedActivations {
 public:
  QuantizedActivations();
  ~QuantizedActivations();
  QuantizedActivations(QuantizedActivations&&) noexcept;
  QuantizedActivations& operator=(QuantizedActivations&&) noexcept;

  // Q8_0, Q8_1, Q8_K, or F32 (plain f32 rows for the F32/F16/BF16 weights).
  QuantFormat format() const { return format_; }
  size_t rows() const { return rows_; }
  size_t cols() const { return cols_; }

  // Row r in the GGUF block layout of format() (f32 values for F32),
  // row_bytes(format(), cols()) long; byte-exact with quantize_row_ref.
  const void* row_blocks(size_t r) const { return blocks_ + r * blocks_stride_; }
  // Bytes from one row's blocks to the next (a multiple of 64).
  size_t row_stride() const { return blocks_stride_; }

  // The same rows unpacked for the kernels (Q8 formats only): cols()
  // values; one f32 scale per block; for Q8_0/Q8_1 the sum of each block's
  // values; for Q8_K its bsums (the sum of each 16 values).
  const int8_t* values(size_t r) const { return values_ + r * values_stride_; }
  const float* scales(size_t r) const { return scales_ + r * blocks_per_row_; }
  const int32_t* block_sums(size_t r) const { return block_sums_ + r * blocks_per_row_; }
  const int16_t* group_sums(size_t r) const { return group_sums_ + r * groups_per_row_; }

 private:
  friend struct detail::ActivationsAccess;

  struct Storage;
  std::unique_ptr<Storage> storage_;
  QuantFormat format_ = QuantFormat::F32;
  size_t rows_ = 0;
  size_t cols_ = 0;
  // Views into storage_, set by ActivationsAccess::reshape.
  uint8_t* blocks_ = nullptr;
  size_t blocks_stride_ = 0;
  int8_t* values_ = nullptr;
  size_t values_stride_ = 0;
  float* scales_ = nullptr;
  int32_t* block_sums_ = nullptr;
  int16_t* group_sums_ = nullptr;
  size_t blocks_per_row_ = 0;
  size_t groups_per_row_ = 0;
};

// Converts n_rows rows of n_cols f32 values (row-major, contiguous) into
// `format`: Q8_0, Q8_1, Q8_K (n_cols a multiple of the block size), or F32.
// The blocks equal quantize_row_ref's byte for byte. With a pool, rows are
// split over its threads. Throws std::invalid_argument on a bad format/shape.
void quantize_activations(QuantFormat format, const float* x, size_t n_rows, size_t n_cols,
                          QuantizedActivations& out, ThreadPool* pool = nullptr);

// Takes rows already in the block layout of `format` (row-major, each
// row_bytes(format, n_cols) long). Their values must lie in [-127, 127], as
// every quantizer of these formats produces them.
void load_activation_blocks(QuantFormat format, const void* blocks, size_t n_rows, size_t n_cols,
                            QuantizedActivations& out);

}  // namespace lamina::quant

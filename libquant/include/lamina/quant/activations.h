// Activation rows prepared for the matmul kernels: quantized once, then
// reused against any number of weight matrices (e.g. Q, K and V).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "lamina/quant/format.h"
#include "lamina/quant/export.h"

namespace lamina::quant {

class ThreadPool;
namespace detail {
struct ActivationsAccess;
}

class LAMINA_QUANT_API QuantizedActivations {
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

 private:
  friend struct detail::ActivationsAccess;

  // Holds the blocks and, for the Q8 formats, the same rows unpacked into
  // the layout the kernels read (see src/activations_access.h).
  struct LAMINA_QUANT_LOCAL Storage;
  std::unique_ptr<Storage> storage_;
  QuantFormat format_ = QuantFormat::F32;
  size_t rows_ = 0;
  size_t cols_ = 0;
  uint8_t* blocks_ = nullptr;
  size_t blocks_stride_ = 0;
};

// Converts n_rows rows of n_cols f32 values (row-major, contiguous) into
// `format`: Q8_0, Q8_1, Q8_K (n_cols a multiple of the block size), or F32.
// The blocks equal quantize_row_ref's byte for byte. With a pool, rows are
// split over its threads. Throws std::invalid_argument on a bad format/shape.
LAMINA_QUANT_API void quantize_activations(QuantFormat format, const float* x, size_t n_rows, size_t n_cols,
                                           QuantizedActivations& out, ThreadPool* pool = nullptr);

// Takes rows already in the block layout of `format` (row-major, each
// row_bytes(format, n_cols) long). Their values must lie in [-127, 127], as
// every quantizer of these formats produces them.
LAMINA_QUANT_API void load_activation_blocks(QuantFormat format, const void* blocks, size_t n_rows, size_t n_cols,
                                             QuantizedActivations& out);

}  // namespace lamina::quant

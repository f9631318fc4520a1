// Weight matrices rearranged, once at load, into a layout that some formats'
// kernels read faster than the file's own: 16 output rows interleaved, so
// that one 512-bit register holds the same values of 16 rows and each of
// its 32-bit lanes accumulates one output (no per-block horizontal sums, and
// the per-block scaling done for 16 rows at once).
//
// Q4_0, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K and IQ4_XS have packed layouts. A
// packed group of 16 rows takes the bytes of the 16 rows it holds, plus, for
// the formats whose 6-bit scales are stored as bytes, 64 (Q3_K, Q4_K, Q5_K)
// or 32 (IQ4_XS) per super-block of 16 rows (1.5-3.6%); the last group of a
// matrix is padded with zero rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lamina/quant/activations.h"
#include "lamina/quant/format.h"
#include "lamina/quant/thread_pool.h"
#include "lamina/quant/export.h"

namespace lamina::quant {

class LAMINA_QUANT_API PackedWeights {
 public:
  PackedWeights() = default;

  QuantFormat format() const { return format_; }
  size_t n_out() const { return n_out_; }
  size_t n_in() const { return n_in_; }
  // Bytes of the packed rows (those of the last group's padding included).
  size_t bytes() const { return bytes_; }
  const uint8_t* data() const { return chunks_.empty() ? nullptr : chunks_.front().bytes; }

 private:
  friend PackedWeights pack_weights(QuantFormat, const void*, size_t, size_t, ThreadPool*);
  // Not zeroed on allocation: the packers write every byte, so the pages
  // of a matrix are touched once, by the thread that packs it.
  struct alignas(64) Chunk {
    Chunk() {}  // NOLINT(modernize-use-equals-default): = default would zero
    uint8_t bytes[64];
  };
  QuantFormat format_ = QuantFormat::F32;
  size_t n_out_ = 0;
  size_t n_in_ = 0;
  size_t bytes_ = 0;
  std::vector<Chunk> chunks_;
};

// Whether `format` has a packed layout.
LAMINA_QUANT_API bool has_packed_layout(QuantFormat format);

// Whether this CPU has a SIMD kernel for the packed layout of `format`, so
// that packing pays (elsewhere the packed layout runs on a scalar kernel).
LAMINA_QUANT_API bool packed_layout_is_faster(QuantFormat format);

// Packs n_out rows of n_in values in `format` (row_bytes(format, n_in) each,
// contiguous), with the pool's threads if given. Throws
// std::invalid_argument for a format without a packed layout or a row length
// that is not a positive multiple of its block.
LAMINA_QUANT_API PackedWeights pack_weights(QuantFormat format, const void* w, size_t n_out, size_t n_in,
                                            ThreadPool* pool = nullptr);

// y[r * n_out + o] = dot(weight row o, activation row r), as the matmul of
// kernels.h does for the unpacked rows (x in kernel_activation_format(
// w.format()), n_in columns). Batch and thread-count invariant in the same
// sense. The scalar kernel and the SIMD one give the same bits; both differ
// from the unpacked kernels only in how the scaled block sums are rounded
// (they add them in f64, the unpacked kernels in f32).
LAMINA_QUANT_API void matmul(const PackedWeights& w, const QuantizedActivations& x, float* y, ThreadPool& pool);

// Whether matmul_as_packed takes `format` (Q4_K and Q5_K).
LAMINA_QUANT_API bool has_packed_arithmetic_on_file_layout(QuantFormat format);

// What matmul(pack_weights(format, w, n_out, n_in), x, y, pool) gives, bit
// for bit on every target, from the rows in the file's layout (as the
// matmul of kernels.h takes them): the packed kernels' f64 sums instead of
// the unpacked kernels' f32 lanes. It lets a model run its first steps
// before its matrices are packed and swap the packed copies in later with
// no change of any output. Decoding runs slower than with either layout's
// kernel (a horizontal integer sum per block and row; on AVX3_DL about 81%
// of the read bandwidth against 92-98%), prompts about as fast as the
// unpacked kernels. Throws std::invalid_argument for a format
// has_packed_arithmetic_on_file_layout rejects or activations that are not
// n_in columns of format_traits(format).activation.
LAMINA_QUANT_API void matmul_as_packed(QuantFormat format, const void* w, size_t n_out, size_t n_in,
                                       const QuantizedActivations& x, float* y, ThreadPool& pool);

}  // namespace lamina::quant

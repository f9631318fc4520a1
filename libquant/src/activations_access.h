// Internal: the kernels' layout of QuantizedActivations, and access to it.
//
// Q8_0 / Q8_1 rows: the values in groups of 4 blocks (128 values): first
// values 0..15 of each of the 4 blocks, then values 16..31 of each, so that
// every 16-byte (128-bit) lane holds half of one block, matching how the
// kernels unpack 4-bit weights on any vector width. A last partial group is
// padded with zero blocks. Per block (padding included), 4 lanes each of:
// the scale d; minus the sum of the block's values in the first lane (0 in
// the other three); d * sum / 4.
// Q8_K rows: the values in order, one f32 scale per block, the 16 bsums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include "hwy/aligned_allocator.h"
#include "lamina/quant/activations.h"

namespace lamina::quant::detail {

inline constexpr size_t kGroupBlocks = 4;
inline constexpr size_t kGroupValues = kGroupBlocks * 32;
inline constexpr size_t kLanesPerBlock = 4;

// A growable aligned array whose contents need not survive growth.
template <class T>
struct GrowableBuffer {
  hwy::AlignedFreeUniquePtr<T[]> data;
  size_t capacity = 0;

  T* reserve(size_t n) {
    if (n == 0) n = 1;
    if (n > capacity) {
      data = hwy::AllocateAligned<T>(n);
      if (!data) throw std::bad_alloc();
      capacity = n;
    }
    return data.get();
  }
};

template <class I8, class F32, class I32, class I16>
struct ActivationRowT {
  I8* values;
  F32* lane_scales;       // Q8_0 / Q8_1
  I32* lane_neg_sums;     // Q8_0 / Q8_1
  F32* lane_scaled_sums;  // Q8_0 / Q8_1
  F32* scales;            // Q8_K
  I16* group_sums;        // Q8_K
};
using ActivationRow = ActivationRowT<const int8_t, const float, const int32_t, const int16_t>;
using MutableActivationRow = ActivationRowT<int8_t, float, int32_t, int16_t>;

}  // namespace lamina::quant::detail

namespace lamina::quant {

struct QuantizedActivations::Storage {
  detail::GrowableBuffer<uint8_t> blocks;
  detail::GrowableBuffer<int8_t> values;
  detail::GrowableBuffer<float> lane_scales;
  detail::GrowableBuffer<int32_t> lane_neg_sums;
  detail::GrowableBuffer<float> lane_scaled_sums;
  detail::GrowableBuffer<float> scales;
  detail::GrowableBuffer<int16_t> group_sums;
  size_t values_stride = 0;  // per row, in values
  size_t lanes_stride = 0;   // per row, in lanes (Q8_0 / Q8_1; else 0)
  size_t scales_stride = 0;  // per row (Q8_K; else 0)
  size_t groups_stride = 0;  // per row (Q8_K; else 0)
};

namespace detail {

struct ActivationsAccess {
  // Sets format and shape, reusing the storage when it is large enough.
  // Throws std::invalid_argument if the format is not an activation format
  // or n_cols is not a multiple of its block size.
  static void reshape(QuantizedActivations& a, QuantFormat format, size_t n_rows, size_t n_cols);

  static uint8_t* blocks(QuantizedActivations& a, size_t r) {
    return a.blocks_ + r * a.blocks_stride_;
  }

  static MutableActivationRow row(QuantizedActivations& a, size_t r) {
    QuantizedActivations::Storage& s = *a.storage_;
    return {s.values.data.get() + r * s.values_stride,
            s.lane_scales.data.get() + r * s.lanes_stride,
            s.lane_neg_sums.data.get() + r * s.lanes_stride,
            s.lane_scaled_sums.data.get() + r * s.lanes_stride,
            s.scales.data.get() + r * s.scales_stride,
            s.group_sums.data.get() + r * s.groups_stride};
  }

  static ActivationRow row(const QuantizedActivations& a, size_t r) {
    const MutableActivationRow m = row(const_cast<QuantizedActivations&>(a), r);
    return {m.values, m.lane_scales, m.lane_neg_sums, m.lane_scaled_sums, m.scales, m.group_sums};
  }
};

}  // namespace detail
}  // namespace lamina::quant

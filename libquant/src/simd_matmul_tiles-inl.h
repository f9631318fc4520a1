// Per-target tiling of a block-format matmul: a thread's range of output
// rows against all activation rows, R activation rows per weight pass.
//
// Batch invariance: every output is produced by the same sequence of
// operations (blocks in order, even blocks into one accumulator and odd
// blocks into another, then one fixed final sum), whatever R, the number of
// activation rows or the thread that runs it.

#if defined(LAMINA_QUANT_SIMD_MATMUL_TILES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAMINA_QUANT_SIMD_MATMUL_TILES_INL_H_
#undef LAMINA_QUANT_SIMD_MATMUL_TILES_INL_H_
#else
#define LAMINA_QUANT_SIMD_MATMUL_TILES_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "lamina/quant/activations.h"
#include "simd_int8-inl.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {

// One activation row in the kernels' layout (see QuantizedActivations).
struct ActRow {
  const int8_t* HWY_RESTRICT values;
  const float* HWY_RESTRICT scales;
  const int32_t* HWY_RESTRICT block_sums;  // Q8_0 / Q8_1
  const int16_t* HWY_RESTRICT group_sums;  // Q8_K
};

// Running sum of one output: lane-wise block contributions plus a scalar
// for the terms that do not depend on the weights' values (block minima).
struct Acc {
  VF32 sum;
  float offset;
};

HWY_INLINE ActRow MakeActRow(const QuantizedActivations& x, size_t r) {
  return ActRow{x.values(r), x.scales(r), x.block_sums(r), x.group_sums(r)};
}

// y[r * y_stride] = dot(weight row w, activation row r) for r < R.
template <class Kernel, size_t R>
HWY_INLINE void DotTile(const typename Kernel::Block* HWY_RESTRICT w, size_t nblocks,
                        const ActRow* rows, float* HWY_RESTRICT y, size_t y_stride) {
  Acc even[R];
  Acc odd[R];
  HWY_UNROLL(4)
  for (size_t r = 0; r < R; ++r) {
    even[r] = Acc{hn::Zero(DF32()), 0.0f};
    odd[r] = Acc{hn::Zero(DF32()), 0.0f};
  }
  size_t b = 0;
  for (; b + 2 <= nblocks; b += 2) {
    Kernel::template Accumulate<R>(w[b], rows, b, even);
    Kernel::template Accumulate<R>(w[b + 1], rows, b + 1, odd);
  }
  if (b < nblocks) Kernel::template Accumulate<R>(w[b], rows, b, even);
  HWY_UNROLL(4)
  for (size_t r = 0; r < R; ++r) {
    y[r * y_stride] = SumLanes(hn::Add(even[r].sum, odd[r].sum)) + (even[r].offset + odd[r].offset);
  }
}

// Activation rows handled per pass over the weight rows: their values stay
// in L2 while the weights stream through once per pass.
inline constexpr size_t kRowChunk = 64;
// Activation rows per weight block decode (register tile).
inline constexpr size_t kRowTile = 4;

// Output rows [o_begin, o_end) of y (n_rows x n_out, row-major) for weights
// of `nblocks` blocks per row.
template <class Kernel>
void MatMulRows(const void* weights, size_t nblocks, size_t n_out, size_t o_begin, size_t o_end,
                const QuantizedActivations& x, float* HWY_RESTRICT y) {
  using Block = typename Kernel::Block;
  const auto* w = static_cast<const Block*>(weights);
  const size_t n_rows = x.rows();
  ActRow rows[kRowChunk];
  for (size_t r0 = 0; r0 < n_rows; r0 += kRowChunk) {
    const size_t r1 = std::min(n_rows, r0 + kRowChunk);
    for (size_t r = r0; r < r1; ++r) rows[r - r0] = MakeActRow(x, r);
    for (size_t o = o_begin; o < o_end; ++o) {
      const Block* wrow = w + o * nblocks;
      size_t r = r0;
      for (; r + kRowTile <= r1; r += kRowTile) {
        DotTile<Kernel, kRowTile>(wrow, nblocks, rows + (r - r0), y + r * n_out + o, n_out);
      }
      switch (r1 - r) {
        case 3: DotTile<Kernel, 3>(wrow, nblocks, rows + (r - r0), y + r * n_out + o, n_out); break;
        case 2: DotTile<Kernel, 2>(wrow, nblocks, rows + (r - r0), y + r * n_out + o, n_out); break;
        case 1: DotTile<Kernel, 1>(wrow, nblocks, rows + (r - r0), y + r * n_out + o, n_out); break;
        default: break;
      }
    }
  }
}

}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard

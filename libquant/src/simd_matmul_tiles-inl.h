// Per-target tiling of a block-format matmul: a thread's range of output
// rows against all activation rows, R activation rows per weight pass.
//
// Batch invariance: every output is produced by the same sequence of
// operations (steps of blocks in order, even steps into one accumulator and
// odd steps into another, then one fixed final sum), whatever R, the number
// of activation rows or the thread that runs it.

#if defined(LAMINA_QUANT_SIMD_MATMUL_TILES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAMINA_QUANT_SIMD_MATMUL_TILES_INL_H_
#undef LAMINA_QUANT_SIMD_MATMUL_TILES_INL_H_
#else
#define LAMINA_QUANT_SIMD_MATMUL_TILES_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "activations_access.h"
#include "lamina/quant/activations.h"
#include "simd_int8-inl.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {

using ActRow = detail::ActivationRow;

HWY_INLINE ActRow MakeActRow(const QuantizedActivations& x, size_t r) {
  return detail::ActivationsAccess::row(x, r);
}

// A kernel provides:
//   Block, Acc (the running sum of one output), kBlocksPerStep;
//   static Acc Zero();
//   template <size_t R> static void Accumulate(const Block* w,
//       const ActRow* rows, size_t b, Acc* acc, size_t n_blocks):
//     adds blocks b .. b + n_blocks - 1 (n_blocks <= kBlocksPerStep) of the
//     weight row times activation rows rows[0..R) to acc[0..R);
//   static float Finish(const Acc& even, const Acc& odd).

// y[r * y_stride] = dot(weight row w, activation row r) for r < R.
template <class Kernel, size_t R>
HWY_INLINE void DotTile(const typename Kernel::Block* HWY_RESTRICT w, size_t nblocks,
                        const ActRow* rows, float* HWY_RESTRICT y, size_t y_stride) {
  using Acc = typename Kernel::Acc;
  constexpr size_t kStep = Kernel::kBlocksPerStep;
  Acc even[R];
  Acc odd[R];
  HWY_UNROLL(4)
  for (size_t r = 0; r < R; ++r) even[r] = odd[r] = Kernel::Zero();
  size_t b = 0;
  for (; b + 2 * kStep <= nblocks; b += 2 * kStep) {
    Kernel::template Accumulate<R>(w + b, rows, b, even, kStep);
    Kernel::template Accumulate<R>(w + b + kStep, rows, b + kStep, odd, kStep);
  }
  if (b < nblocks) {
    const size_t n = std::min(kStep, nblocks - b);
    Kernel::template Accumulate<R>(w + b, rows, b, even, n);
    b += n;
  }
  if (b < nblocks) Kernel::template Accumulate<R>(w + b, rows, b, odd, nblocks - b);
  HWY_UNROLL(4)
  for (size_t r = 0; r < R; ++r) y[r * y_stride] = Kernel::Finish(even[r], odd[r]);
}

// The accumulator of the portable kernels: lane-wise block contributions
// plus a scalar for the terms that do not depend on the weights' values
// (block minima).
struct PortableAcc {
  VF32 sum;
  float offset;
};

// Shared parts of the portable kernels, which take one block per step.
struct PortableKernelBase {
  using Acc = PortableAcc;
  static constexpr size_t kBlocksPerStep = 1;
  static HWY_INLINE Acc Zero() { return Acc{hn::Zero(DF32()), 0.0f}; }
  static HWY_INLINE float Finish(const Acc& even, const Acc& odd) {
    return SumLanes(hn::Add(even.sum, odd.sum)) + (even.offset + odd.offset);
  }
};

// Activation rows per weight block decode (register tile).
inline constexpr size_t kRowTile = 4;

// Output rows [o_begin, o_end) of y (n_rows x n_out, row-major) for weights
// of `nblocks` blocks per row; activation rows are taken `chunk` at a time
// (chunk <= kMaxChunk), each chunk against all the weight rows.
inline constexpr size_t kMaxChunk = 256;

template <class Kernel>
void MatMulRows(const void* weights, size_t nblocks, size_t n_out, size_t o_begin, size_t o_end,
                const QuantizedActivations& x, size_t chunk, float* HWY_RESTRICT y) {
  using Block = typename Kernel::Block;
  const auto* w = static_cast<const Block*>(weights);
  const size_t n_rows = x.rows();
  chunk = std::min(chunk, kMaxChunk);
  ActRow rows[kMaxChunk];
  for (size_t r0 = 0; r0 < n_rows; r0 += chunk) {
    const size_t r1 = std::min(n_rows, r0 + chunk);
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

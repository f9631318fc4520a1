// Per-target tiling of a block-format matmul: a thread's range of output
// rows against all activation rows, R activation rows per weight pass.
//
// Batch invariance: every output is produced by the same sequence of
// operations (steps of blocks in order, even steps into one accumulator and
// odd steps into another, or for kernels with kSplitSums false all steps
// into one, then one fixed final sum), whatever the tile, the number of
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

#include "activations_access.h"
#include "lamina/quant/activations.h"
#include "simd_int8-inl.h"
#include "stream_prefetch.h"

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

// Kernels that set kWeightRows > 1 also provide
//   template <size_t W, size_t R> static void AccumulateTile(const Block* w,
//       size_t stride, const ActRow* rows, size_t b, Acc* acc, size_t n_blocks):
//     the same for W <= kWeightRows weight rows (row i at w + i * stride)
//     into acc[i * R + r], each row's sums taking exactly the operations
//     Accumulate would.

// Blocks b .. b + n - 1 of W weight rows (W > 1 only for kernels that
// decode several rows per step).
template <class Kernel, size_t W, size_t R>
HWY_INLINE void AccumulateStep(const typename Kernel::Block* w, size_t stride, const ActRow* rows, size_t b,
                               typename Kernel::Acc* acc, size_t n) {
  if constexpr (W == 1) {
    Kernel::template Accumulate<R>(w, rows, b, acc, n);
  } else {
    Kernel::template AccumulateTile<W, R>(w, stride, rows, b, acc, n);
  }
}

// y[r * y_stride + i] = dot(weight row i, activation row r) for i < W,
// r < R; weight row i starts at w + i * nblocks.
template <class Kernel, size_t W, size_t R>
HWY_INLINE void DotTile(const typename Kernel::Block* HWY_RESTRICT w, size_t nblocks,
                        const ActRow* rows, float* HWY_RESTRICT y, size_t y_stride) {
  using Acc = typename Kernel::Acc;
  using Block = typename Kernel::Block;
  constexpr size_t kStep = Kernel::kBlocksPerStep;
  // One weight row against one activation row streams the weights.
  constexpr bool kStream = W == 1 && R == 1;
  if constexpr (!Kernel::kSplitSums) {
    // Large tiles have enough independent sums without the split, and the
    // registers are better spent on more rows.
    Acc acc[W * R];
    HWY_UNROLL(8)
    for (size_t i = 0; i < W * R; ++i) acc[i] = Kernel::Zero();
    for (size_t b = 0; b < nblocks; b += kStep) {
      if constexpr (kStream) detail::prefetch_stream<kStep * sizeof(Block)>(w + b);
      AccumulateStep<Kernel, W, R>(w + b, nblocks, rows, b, acc, std::min(kStep, nblocks - b));
    }
    HWY_UNROLL(8)
    for (size_t i = 0; i < W; ++i) {
      for (size_t r = 0; r < R; ++r) y[r * y_stride + i] = Kernel::Finish(acc[i * R + r], Kernel::Zero());
    }
    return;
  }
  Acc even[W * R];
  Acc odd[W * R];
  HWY_UNROLL(8)
  for (size_t i = 0; i < W * R; ++i) even[i] = odd[i] = Kernel::Zero();
  size_t b = 0;
  for (; b + 2 * kStep <= nblocks; b += 2 * kStep) {
    if constexpr (kStream) detail::prefetch_stream<2 * kStep * sizeof(Block)>(w + b);
    AccumulateStep<Kernel, W, R>(w + b, nblocks, rows, b, even, kStep);
    AccumulateStep<Kernel, W, R>(w + b + kStep, nblocks, rows, b + kStep, odd, kStep);
  }
  if (b < nblocks) {
    const size_t n = std::min(kStep, nblocks - b);
    AccumulateStep<Kernel, W, R>(w + b, nblocks, rows, b, even, n);
    b += n;
  }
  if (b < nblocks) AccumulateStep<Kernel, W, R>(w + b, nblocks, rows, b, odd, nblocks - b);
  HWY_UNROLL(8)
  for (size_t i = 0; i < W; ++i) {
    for (size_t r = 0; r < R; ++r) y[r * y_stride + i] = Kernel::Finish(even[i * R + r], odd[i * R + r]);
  }
}

// The accumulator of the portable kernels: the block contributions, plus a
// scalar for the terms that do not depend on the weights' values (block
// minima). SIMD targets sum the blocks lane-wise in f32. The 1-lane baseline
// target sums them in f64, as the packed layouts' scalar kernel does: in f32
// its chains, one lane long, would be the longest of any target, and their
// rounding tipped activations of the next layer over Q8 rounding boundaries
// that the f64 reference does not cross (qwen2 Q8_0 and Q4_K_M, phi3 Q4_K_M
// of tests/model each moved a logit by 0.1 where the best target matches).
#if HWY_TARGET == HWY_SCALAR
struct PortableAcc {
  double sum;
  double offset;
};
HWY_INLINE PortableAcc ZeroPortableAcc() { return {0.0, 0.0}; }
// acc += dot * d * da (dot an exact integer sum; d * da is exact in f64).
HWY_INLINE void AddBlock(PortableAcc& acc, VI32 dot, float d, float da) {
  acc.sum += static_cast<double>(hn::GetLane(dot)) * (static_cast<double>(d) * da);
}
HWY_INLINE void AddOffset(PortableAcc& acc, float m, float scaled_sum) {
  acc.offset += static_cast<double>(m) * scaled_sum;
}
HWY_INLINE float FinishPortableAcc(const PortableAcc& even, const PortableAcc& odd) {
  return static_cast<float>((even.sum + odd.sum) + (even.offset + odd.offset));
}
#else
struct PortableAcc {
  VF32 sum;
  float offset;
};
HWY_INLINE PortableAcc ZeroPortableAcc() { return {hn::Zero(DF32()), 0.0f}; }
// acc += dot * (d * da), lane by lane (dot's lanes exact integer sums).
HWY_INLINE void AddBlock(PortableAcc& acc, VI32 dot, float d, float da) {
  acc.sum = hn::MulAdd(hn::ConvertTo(DF32(), dot), hn::Set(DF32(), d * da), acc.sum);
}
HWY_INLINE void AddOffset(PortableAcc& acc, float m, float scaled_sum) { acc.offset += m * scaled_sum; }
HWY_INLINE float FinishPortableAcc(const PortableAcc& even, const PortableAcc& odd) {
  return SumLanes(hn::Add(even.sum, odd.sum)) + (even.offset + odd.offset);
}
#endif

// Shared parts of the portable kernels, which take one block per step.
struct PortableKernelBase {
  using Acc = PortableAcc;
  static constexpr size_t kBlocksPerStep = 1;
  static constexpr size_t kWeightRows = 1;
  static constexpr size_t kRowTile = 4;
  static constexpr bool kSplitSums = true;
  static HWY_INLINE Acc Zero() { return ZeroPortableAcc(); }
  static HWY_INLINE float Finish(const Acc& even, const Acc& odd) { return FinishPortableAcc(even, odd); }
};

// Output rows [o_begin, o_end) of y (n_rows x n_out, row-major) for weights
// of `nblocks` blocks per row; activation rows are taken `chunk` at a time
// (chunk <= kMaxChunk), each chunk against all the weight rows.
inline constexpr size_t kMaxChunk = 256;

// Weight rows visited together against one activation tile: about 12 KiB,
// so that they stay in L1 while every tile of the chunk passes over them
// and the activations are read from L2 once per band rather than once per
// weight row. The order of the work changes, not any output's arithmetic.
inline constexpr size_t kWeightBandBytes = size_t{12} << 10;

// Weight rows [o0, o1) against activation rows rows[0..R): kWeightRows at
// a time, then one by one. A single activation row (decode) takes the
// weight rows one by one: there the weights' bandwidth, not the shared
// activation loads, sets the speed, and one stream at a time measured
// faster.
template <class Kernel, size_t R>
HWY_INLINE void BandTile(const typename Kernel::Block* w, size_t nblocks, size_t o0, size_t o1,
                         const ActRow* rows, float* HWY_RESTRICT y, size_t n_out) {
  constexpr size_t W = R > 1 ? Kernel::kWeightRows : 1;
  size_t o = o0;
  if constexpr (W > 1) {
    for (; o + W <= o1; o += W) DotTile<Kernel, W, R>(w + o * nblocks, nblocks, rows, y + o, n_out);
  }
  for (; o < o1; ++o) DotTile<Kernel, 1, R>(w + o * nblocks, nblocks, rows, y + o, n_out);
}

// BandTile for the last R' < R activation rows of a chunk.
template <class Kernel, size_t R>
HWY_INLINE void BandTail(size_t rem, const typename Kernel::Block* w, size_t nblocks, size_t o0, size_t o1,
                         const ActRow* rows, float* HWY_RESTRICT y, size_t n_out) {
  if constexpr (R > 0) {
    if (rem == R) return BandTile<Kernel, R>(w, nblocks, o0, o1, rows, y, n_out);
    BandTail<Kernel, R - 1>(rem, w, nblocks, o0, o1, rows, y, n_out);
  }
}

// Activation rows per weight decode (register tile): Kernel::kRowTile.
template <class Kernel>
void MatMulRows(const void* weights, size_t nblocks, size_t n_out, size_t o_begin, size_t o_end,
                const QuantizedActivations& x, size_t chunk, float* HWY_RESTRICT y) {
  using Block = typename Kernel::Block;
  const auto* w = static_cast<const Block*>(weights);
  const size_t n_rows = x.rows();
  const size_t band = std::max<size_t>(1, kWeightBandBytes / (nblocks * sizeof(Block)));
  chunk = std::min(chunk, kMaxChunk);
  ActRow rows[kMaxChunk];
  for (size_t r0 = 0; r0 < n_rows; r0 += chunk) {
    const size_t r1 = std::min(n_rows, r0 + chunk);
    for (size_t r = r0; r < r1; ++r) rows[r - r0] = MakeActRow(x, r);
    for (size_t o0 = o_begin; o0 < o_end; o0 += band) {
      const size_t o1 = std::min(o_end, o0 + band);
      constexpr size_t kTile = Kernel::kRowTile;
      size_t r = r0;
      for (; r + kTile <= r1; r += kTile) {
        BandTile<Kernel, kTile>(w, nblocks, o0, o1, rows + (r - r0), y + r * n_out, n_out);
      }
      BandTail<Kernel, kTile - 1>(r1 - r, w, nblocks, o0, o1, rows + (r - r0), y + r * n_out, n_out);
    }
  }
}

}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard

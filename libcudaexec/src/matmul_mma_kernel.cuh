// The tensor-core matrix product of quantized weights with int8 activation
// rows (any number of rows from 2; one row takes the matvec), following the
// arithmetic contract of weight_formats.cuh: per output the 256-value
// segments in increasing order, their integer dots exact in int8 MMAs.
//
// A block computes a kM-output x kN-row tile and walks the whole row of
// segments, so each output's f32 chain runs in one thread in segment order,
// whatever the tile, the grid or the number of rows: the results equal the
// matvec's bit for bit. Segments arrive through a ring of kStages shared-
// memory stages filled by cp.async (the raw weight bytes, 16 bytes at a time
// from the 16-byte boundary at or below each row's segment, so blocks of any
// size and alignment copy alike; the activations' int8 values and scales),
// so the loads of later segments overlap the math of the current one.
//
// Weights are the MMA's A operand (16 outputs per m16 tile), decoded from the
// raw bytes in shared memory straight into fragments; activations are B (8
// rows per n8 tile), read with ldmatrix.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "activation_layout.h"
#include "cuda_check.h"
#include "launch.cuh"
#include "matmul.h"
#include "matmul_mma.h"
#include "mma_primitives.cuh"
#include "weight_formats.cuh"

namespace lamina::cudaexec::detail {

// kWarpsM x kWarpsN warps, each kMt m16 tiles (outputs) x kNt n8 tiles
// (rows); shared memory sized for kBlocksPerSm resident blocks. With
// kWarpsK > 1 (super-block formats), kWarpsK such slices of warps take
// consecutive segments: each computes its segment's f32 parts, and the first
// slice adds them to the totals in segment order, so short batches walk a
// row kWarpsK times faster with the same bits.
template <int kWarpsM_, int kWarpsN_, int kMt_, int kNt_, int kBlocksPerSm_, int kWarpsK_ = 1>
struct MmaConfig {
  static constexpr int kWarpsM = kWarpsM_, kWarpsN = kWarpsN_, kMt = kMt_, kNt = kNt_;
  static constexpr int kBlocksPerSm = kBlocksPerSm_;
  static constexpr int kWarpsK = kWarpsK_;
  static constexpr int kSliceThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kThreads = kSliceThreads * kWarpsK;
  static constexpr int kM = 16 * kMt * kWarpsM;  // outputs per block
  static constexpr int kN = 8 * kNt * kWarpsN;   // activation rows per block
};

struct MmaParams {
  const uint8_t* w = nullptr;
  std::size_t w_row_bytes = 0;
  uint32_t n_out = 0, n_in = 0;
  const uint8_t* act = nullptr;  // activation rows (activation_layout.h)
  std::size_t act_stride = 0;
  uint32_t qs_offset = 0, scale_offset = 0, sum_offset = 0, split_offset = 0;
  uint32_t n_rows = 0;
  float* y = nullptr;
  std::size_t y_stride = 0;
  const float* bias = nullptr;
  const float* residual = nullptr;
  // Per blockIdx.z (MatmulArgs::n_batch, batch_rows).
  std::size_t w_batch_bytes = 0, act_batch_bytes = 0, y_batch_stride = 0, bias_batch_stride = 0;
  const uint32_t* batch_rows = nullptr;

};

template <class F>
inline constexpr bool kIsSuperBlock = requires { F::kSubs; };

// Where a stage's pieces lie in shared memory, per format and tile.
template <class F, class C>
struct MmaLayout {
  static constexpr bool kSuper = kIsSuperBlock<F>;
  static constexpr uint32_t kSegBytes = kSuper ? F::kBlockBytes : 8 * F::kBlockBytes;
  static constexpr int kSteps = [] {
    if constexpr (kIsSuperBlock<F>) return F::kSubs;
    return 8;
  }();
  static constexpr int kK = [] {
    if constexpr (kIsSuperBlock<F>) return F::kSubValues;
    return 32;
  }();
  // 16-byte chunks that cover a segment starting anywhere in a chunk.
  static constexpr int kChunks = (kSegBytes + 15 + 15) / 16;
  // Row slots an odd multiple of 16 bytes apart, so the 8 rows of a fragment
  // load fall in distinct banks.
  static constexpr int kWSlot = (kChunks % 2 == 1) ? kChunks * 16 : kChunks * 16 + 16;
  static constexpr int kAStride = kSegmentValues + 16;
  static constexpr int kWBytes = C::kM * kWSlot;
  static constexpr int kABytes = C::kN * kAStride;
  // Scales (f32) per row and block; the formats with minima add per block
  // the exact sums (32-value blocks) or the split sums (super-blocks, 32 B).
  static constexpr int kMetaBytes = kSuper ? C::kN * 4 + (F::kMin ? C::kN * 32 : 0)
                                           : 8 * C::kN * 4 * (F::kMin ? 2 : 1);
  // A stage holds kWarpsK segments, one slot each.
  static constexpr int kSlotBytes = (kWBytes + kABytes + kMetaBytes + 127) / 128 * 128;
  static constexpr int kStageBytes = kSlotBytes * C::kWarpsK;
  static constexpr int kStages = std::clamp(225 * 1024 / C::kBlocksPerSm / kStageBytes, 2, 4);
  static constexpr int kSmemBytes = kStages * kStageBytes;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory of a block");
  // The parts a slice hands to the first: one f32 per thread and output
  // pair, consecutive threads adjacent, over the weights and activations of
  // the slice's own (finished) slot; its scales stay for the first slice.
  static constexpr int kParts = C::kMt * C::kNt * 4;
  static_assert(C::kWarpsK == 1 || kSuper, "only super-block formats split segments over warps");
  static_assert(C::kWarpsK == 1 || kParts * C::kSliceThreads * 4 <= kWBytes + kABytes, "the parts fit their slot");
};

// Chooses among N values by a run-time index without local memory.
template <int N>
__device__ __forceinline__ uint32_t pick(const uint32_t (&v)[N], int i) {
  uint32_t r = v[0];
#pragma unroll
  for (int k = 1; k < N; ++k) r = (i == k) ? v[k] : r;
  return r;
}

// B fragments of the warp's kNt n8 tiles for one k-step (kK values at byte
// k_byte of each activation row in the tile).
template <int kK, int kNt, int kAStride>
__device__ __forceinline__ void load_b_fragments(uint32_t (&b)[kNt][2], const uint8_t* rows, int lane, int k_byte) {
  if constexpr (kK == 32) {
#pragma unroll
    for (int nt = 0; nt < kNt; nt += 2) {
      if (nt + 1 < kNt) {
        uint32_t r[4];
        const int row = (nt + (lane >> 4)) * 8 + (lane & 7);
        ldmatrix_x4(r, rows + row * kAStride + k_byte + ((lane >> 3) & 1) * 16);
        b[nt][0] = r[0];
        b[nt][1] = r[1];
        b[nt + 1][0] = r[2];
        b[nt + 1][1] = r[3];
      } else {
        uint32_t r[2];
        ldmatrix_x2(r, rows + (nt * 8 + (lane & 7)) * kAStride + k_byte + ((lane >> 3) & 1) * 16);
        b[nt][0] = r[0];
        b[nt][1] = r[1];
      }
    }
  } else {
#pragma unroll
    for (int nt = 0; nt < kNt; nt += 4) {
      if (nt + 3 < kNt) {
        uint32_t r[4];
        ldmatrix_x4(r, rows + ((nt + (lane >> 3)) * 8 + (lane & 7)) * kAStride + k_byte);
#pragma unroll
        for (int i = 0; i < 4; ++i) b[nt + i][0] = r[i];
      } else if (nt + 1 < kNt) {
        uint32_t r[2];
        ldmatrix_x2(r, rows + ((nt + ((lane >> 3) & 1)) * 8 + (lane & 7)) * kAStride + k_byte);
        b[nt][0] = r[0];
        b[nt + 1][0] = r[1];
      } else {
        ldmatrix_x1(b[nt][0], rows + (nt * 8 + (lane & 7)) * kAStride + k_byte);
      }
    }
  }
}

// Every per-pair value of a thread's accumulator tile set to v.
template <class T, int A, int B>
__device__ __forceinline__ void fill_tile(T (&tile)[A][B][4], T v) {
#pragma unroll
  for (int a = 0; a < A; ++a)
#pragma unroll
    for (int b = 0; b < B; ++b)
#pragma unroll
      for (int i = 0; i < 4; ++i) tile[a][b][i] = v;
}

// kBatched: product blockIdx.z of a batched or grouped launch
// (MatmulArgs::n_batch); its own instantiation, since the offsets cost the
// single product registers (and the large tiles spills).
template <class F, class C, bool kBatched>
__global__ void __launch_bounds__(C::kThreads, C::kBlocksPerSm) matmul_mma_kernel(const MmaParams p) {
  const uint8_t* w_base = p.w;
  const uint8_t* act_base = p.act;
  float* y_base = p.y;
  const float* bias = p.bias;
  uint32_t n_rows = p.n_rows;
  if constexpr (kBatched) {
    w_base += blockIdx.z * p.w_batch_bytes;
    act_base += blockIdx.z * p.act_batch_bytes;
    y_base += blockIdx.z * p.y_batch_stride;
    if (bias != nullptr) bias += blockIdx.z * p.bias_batch_stride;
    if (p.batch_rows != nullptr) {
      // Grouped: this product's rows are known once their producer is done
      // (so its weights load after that wait, not before).
      wait_for_prior_kernels();
      const uint32_t first = p.batch_rows[blockIdx.z];
      n_rows = p.batch_rows[blockIdx.z + 1] - first;
      if (blockIdx.y * C::kN >= n_rows) return;
      act_base += static_cast<std::size_t>(first) * p.act_stride;
      y_base += static_cast<std::size_t>(first) * p.y_stride;
    }
  }
  using L = MmaLayout<F, C>;
  constexpr int kMt = C::kMt, kNt = C::kNt;
  extern __shared__ __align__(128) uint8_t smem[];

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5, gid = lane >> 2, tig = lane & 3;
  // The slice (segment wk of each group) and the warp's place in it.
  const int wk = C::kWarpsK == 1 ? 0 : warp / (C::kWarpsM * C::kWarpsN);
  const int slice_tid = C::kWarpsK == 1 ? tid : tid % C::kSliceThreads;
  const int slice_warp = slice_tid >> 5;
  const int wm = slice_warp % C::kWarpsM, wn = slice_warp / C::kWarpsM;
  const uint32_t o0 = blockIdx.x * C::kM, r0 = blockIdx.y * C::kN;
  const uint32_t n_seg = (p.n_in + kSegmentValues - 1) / kSegmentValues;
  const uint32_t n_groups = (n_seg + C::kWarpsK - 1) / C::kWarpsK;
  const uint32_t n_blocks32 = p.n_in / 32;

  auto stage_base = [&](uint32_t seg) {
    return smem + (seg / C::kWarpsK % L::kStages) * L::kStageBytes + (seg % C::kWarpsK) * L::kSlotBytes;
  };

  auto issue_weights = [&](uint32_t seg) {
    uint8_t* dst = stage_base(seg);
    for (int i = tid; i < C::kM * L::kChunks; i += C::kThreads) {
      const int row = i / L::kChunks, c = i % L::kChunks;
      if (o0 + row < p.n_out) {
        const uintptr_t at = reinterpret_cast<uintptr_t>(w_base + (o0 + row) * p.w_row_bytes + seg * L::kSegBytes);
        cp_async16(dst + row * L::kWSlot + 16 * c, reinterpret_cast<const void*>((at & ~uintptr_t{15}) + 16 * c));
      }
    }
  };
  auto issue_acts = [&](uint32_t seg) {
    uint8_t* base = stage_base(seg);
    uint8_t* dst = base + L::kWBytes;
    const uint32_t chunks = min(kSegmentValues, p.n_in - seg * kSegmentValues) / 16;
    for (int i = tid; i < C::kN * 16; i += C::kThreads) {
      const int row = i / 16, c = i % 16;
      if (static_cast<uint32_t>(c) < chunks && r0 + row < n_rows) {
        cp_async16(dst + row * L::kAStride + 16 * c,
                   act_base + (r0 + row) * p.act_stride + p.qs_offset + seg * kSegmentValues + 16 * c);
      }
    }
    uint8_t* meta = dst + L::kABytes;
    if constexpr (L::kSuper) {
      for (int row = tid; row < C::kN; row += C::kThreads) {
        if (r0 + row < n_rows) {
          const uint8_t* arow = act_base + (r0 + row) * p.act_stride;
          cp_async4(meta + 4 * row, arow + p.scale_offset + 4 * seg);
          if constexpr (F::kMin) {
            cp_async16(meta + 4 * C::kN + 32 * row, arow + p.split_offset + 32 * seg);
            cp_async16(meta + 4 * C::kN + 32 * row + 16, arow + p.split_offset + 32 * seg + 16);
          }
        }
      }
    } else {
      for (int i = tid; i < 8 * C::kN; i += C::kThreads) {
        const int b = i / C::kN, row = i % C::kN;
        const uint32_t block = seg * 8 + b;
        if (block < n_blocks32 && r0 + row < n_rows) {
          const uint8_t* arow = act_base + (r0 + row) * p.act_stride;
          cp_async4(meta + 4 * i, arow + p.scale_offset + 4 * block);
          if constexpr (F::kMin) cp_async4(meta + 4 * (8 * C::kN + i), arow + p.sum_offset + 4 * block);
        }
      }
    }
  };

  // Group g: segments g * kWarpsK .. + kWarpsK - 1 (those that exist).
  auto issue_group_weights = [&](uint32_t g) {
#pragma unroll
    for (int k = 0; k < C::kWarpsK; ++k)
      if (g * C::kWarpsK + k < n_seg) issue_weights(g * C::kWarpsK + k);
  };
  auto issue_group_acts = [&](uint32_t g) {
#pragma unroll
    for (int k = 0; k < C::kWarpsK; ++k)
      if (g * C::kWarpsK + k < n_seg) issue_acts(g * C::kWarpsK + k);
  };
  // The weights are never written by a kernel: their first stages load
  // while the previous kernel (the activations' producer) still runs.
  for (int s = 0; s < L::kStages - 1; ++s) issue_group_weights(s);
  wait_for_prior_kernels();
  for (int s = 0; s < L::kStages - 1; ++s) {
    issue_group_acts(s);
    cp_async_commit();
  }

  // This thread's output rows in the tile (m tile mt, half h) and their
  // weight rows' byte addresses.
  int w_row[kMt][2];
  uintptr_t w_addr[kMt][2];
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      w_row[mt][h] = wm * 16 * kMt + 16 * mt + gid + 8 * h;
      const uint32_t o = min(o0 + w_row[mt][h], p.n_out - 1);
      w_addr[mt][h] = reinterpret_cast<uintptr_t>(w_base + o * p.w_row_bytes);
    }
  }
  const int col0 = wn * 8 * kNt;  // the warp's first row (column of B) in the tile

  float total[kMt][kNt][4];
  fill_tile(total, -0.0f);

  for (uint32_t g = 0; g < n_groups; ++g) {
    cp_async_wait<L::kStages - 2>();
    __syncthreads();
    if (g + L::kStages - 1 < n_groups) {
      issue_group_weights(g + L::kStages - 1);
      issue_group_acts(g + L::kStages - 1);
    }
    cp_async_commit();
    const uint32_t seg = g * C::kWarpsK + wk;

    const uint8_t* wtile = stage_base(seg);
    const uint8_t* atile = wtile + L::kWBytes + col0 * L::kAStride;
    const uint8_t* meta = wtile + L::kWBytes + L::kABytes;
    const uint8_t* seg_ptr[kMt][2];
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        seg_ptr[mt][h] = wtile + w_row[mt][h] * L::kWSlot + ((w_addr[mt][h] + seg * L::kSegBytes) & 15u);

    if constexpr (!L::kSuper) {
      // 32-value blocks: the chain runs through every block in order.
      const float* da_meta = reinterpret_cast<const float*>(meta);
      const int* sum_meta = reinterpret_cast<const int*>(meta) + 8 * C::kN;
      const int nb = static_cast<int>(min(8u, n_blocks32 - seg * 8));
#pragma unroll
      for (int b = 0; b < 8; ++b) {
        if (b >= nb) break;
        uint32_t bf[kNt][2];
        load_b_fragments<32, kNt, L::kAStride>(bf, atile, lane, 32 * b);
#pragma unroll
        for (int mt = 0; mt < kMt; ++mt) {
          const uint8_t* blk0 = seg_ptr[mt][0] + b * F::kBlockBytes;
          const uint8_t* blk1 = seg_ptr[mt][1] + b * F::kBlockBytes;
          uint32_t a0, a1, a2, a3;
          F::template word<SharedMem>(blk0, tig, a0, a2);
          F::template word<SharedMem>(blk1, tig, a1, a3);
          const float dw[2] = {F::template scale<SharedMem>(blk0), F::template scale<SharedMem>(blk1)};
          const float offset[2] = {block_dot_offset(dw[0]), block_dot_offset(dw[1])};
          const float mw[2] = {F::template min_value<SharedMem>(blk0), F::template min_value<SharedMem>(blk1)};
#pragma unroll
          for (int nt = 0; nt < kNt; ++nt) {
            const int col = col0 + nt * 8 + 2 * tig;
            const float2 da = *reinterpret_cast<const float2*>(da_meta + b * C::kN + col);
            int acc[4] = {kFloatMagicBits, kFloatMagicBits, kFloatMagicBits, kFloatMagicBits};
            mma_s8_k32(acc, a0, a1, a2, a3, bf[nt][0], bf[nt][1]);
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              float u = block_scaled_dot(acc[i], dw[i >> 1], offset[i >> 1]);
              if constexpr (F::kMin) {
                const int sum = sum_meta[b * C::kN + col + (i & 1)];
                u = block_scaled_dot_min(u, exact_float_biased(kFloatMagicBits + sum), mw[i >> 1]);
              }
              total[mt][nt][i] = block_step(total[mt][nt][i], u, (i & 1) ? da.y : da.x);
            }
          }
        }
      }
    } else if (C::kWarpsK == 1 || seg < n_seg) {
      // Super-block: integer sums over every sub-block, then one f32 term.
      int isum[kMt][kNt][4];
      fill_tile(isum, 0);
      // The sub-block scales of this thread's rows, as packed bytes.
      uint32_t scales[kMt][2][4];
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) F::template sub_scales<SharedMem>(seg_ptr[mt][h], scales[mt][h]);
      // Unrolled in groups of 4 steps (within a scale word): whole 16-step
      // segments unrolled spill registers in the larger tiles.
      constexpr int kUnroll = L::kSteps > 8 ? 4 : 8;
#pragma unroll kUnroll
      for (int s = 0; s < L::kSteps; ++s) {
        uint32_t bf[kNt][2];
        load_b_fragments<L::kK, kNt, L::kAStride>(bf, atile, lane, L::kK * s);
#pragma unroll
        for (int mt = 0; mt < kMt; ++mt) {
          uint32_t a0, a1, a2, a3;
          F::template frag<SharedMem>(seg_ptr[mt][0], s, tig, a0, a2);
          F::template frag<SharedMem>(seg_ptr[mt][1], s, tig, a1, a3);
          const int sc[2] = {scale_byte(scales[mt][0], s), scale_byte(scales[mt][1], s)};
#pragma unroll
          for (int nt = 0; nt < kNt; ++nt) {
            int acc[4] = {0, 0, 0, 0};
            if constexpr (L::kK == 32) {
              mma_s8_k32(acc, a0, a1, a2, a3, bf[nt][0], bf[nt][1]);
            } else {
              mma_s8_k16(acc, a0, a1, bf[nt][0]);
            }
#pragma unroll
            for (int i = 0; i < 4; ++i) isum[mt][nt][i] += sc[i >> 1] * acc[i];
          }
        }
      }
      const float* da_meta = reinterpret_cast<const float*>(meta);
      const uint8_t* split = meta + 4 * C::kN + col0 * 32;
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt) {
        const float d[2] = {F::template d<SharedMem>(seg_ptr[mt][0]), F::template d<SharedMem>(seg_ptr[mt][1])};
        const float dmin[2] = {F::template dmin<SharedMem>(seg_ptr[mt][0]),
                               F::template dmin<SharedMem>(seg_ptr[mt][1])};
        uint32_t mins0[4] = {0, 0, 0, 0}, mins1[4] = {0, 0, 0, 0};
        if constexpr (F::kMin) {
          F::template mins<SharedMem>(seg_ptr[mt][0], mins0);
          F::template mins<SharedMem>(seg_ptr[mt][1], mins1);
        }
        const uint32_t am0 = pick(mins0, tig), am1 = pick(mins1, tig);
#pragma unroll
        for (int nt = 0; nt < kNt; ++nt) {
          const int col = col0 + nt * 8 + 2 * tig;
          const float2 da = *reinterpret_cast<const float2*>(da_meta + col);
          // msum = sum over sub-blocks of min * (64 h + l): a k16 MMA over the
          // h parts, its sums times 64 (plus kFloatMagicBits, for the exact
          // conversion) starting the MMA over the l parts.
          int msum[4] = {0, 0, 0, 0};
          if constexpr (F::kMin) {
            const uint8_t* split_col = split + (nt * 8 + gid) * 32;
            mma_s8_k16(msum, am0, am1, *reinterpret_cast<const uint32_t*>(split_col + 4 * tig));
#pragma unroll
            for (int i = 0; i < 4; ++i) msum[i] = msum[i] * 64 + kFloatMagicBits;
            mma_s8_k16(msum, am0, am1, *reinterpret_cast<const uint32_t*>(split_col + 16 + 4 * tig));
          }
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const float a_scale = (i & 1) ? da.y : da.x;
            const float part = F::kMin ? superblock_part_min(isum[mt][nt][i], exact_float_biased(msum[i]),
                                                             d[i >> 1], dmin[i >> 1])
                                       : superblock_part(isum[mt][nt][i], d[i >> 1]);
            // The other slices keep their part where the first keeps totals.
            total[mt][nt][i] = wk == 0 ? superblock_step(total[mt][nt][i], part, a_scale) : part;
          }
        }
      }
    }
    if constexpr (C::kWarpsK > 1) {
      // The first slice adds the other slices' parts in segment order.
      __syncthreads();  // every slice is done reading its slot
      if (wk != 0 && seg < n_seg) {
        float* parts = reinterpret_cast<float*>(stage_base(seg));
#pragma unroll
        for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
          for (int nt = 0; nt < kNt; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i)
              parts[((mt * kNt + nt) * 4 + i) * C::kSliceThreads + slice_tid] = total[mt][nt][i];
      }
      __syncthreads();
      if (wk == 0) {
#pragma unroll
        for (int k = 1; k < C::kWarpsK; ++k) {
          const uint32_t seg_k = g * C::kWarpsK + k;
          if (seg_k >= n_seg) break;
          const float* parts = reinterpret_cast<const float*>(stage_base(seg_k));
          const float* da_meta = reinterpret_cast<const float*>(stage_base(seg_k) + L::kWBytes + L::kABytes);
#pragma unroll
          for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
            for (int nt = 0; nt < kNt; ++nt) {
              const float2 da = *reinterpret_cast<const float2*>(da_meta + col0 + nt * 8 + 2 * tig);
#pragma unroll
              for (int i = 0; i < 4; ++i) {
                const float part = parts[((mt * kNt + nt) * 4 + i) * C::kSliceThreads + slice_tid];
                total[mt][nt][i] = superblock_step(total[mt][nt][i], part, (i & 1) ? da.y : da.x);
              }
            }
        }
      }
    }
  }
  cp_async_wait<0>();
  release_next_kernel();
  if (wk != 0) return;

#pragma unroll
  for (int mt = 0; mt < kMt; ++mt) {
#pragma unroll
    for (int nt = 0; nt < kNt; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint32_t o = o0 + w_row[mt][i >> 1];
        const uint32_t r = r0 + col0 + nt * 8 + 2 * tig + (i & 1);
        if (o < p.n_out && r < n_rows) {
          const std::size_t at = static_cast<std::size_t>(r) * p.y_stride + o;
          float v = total[mt][nt][i];
          if (bias != nullptr) v = __fadd_rn(v, bias[o]);
          if (p.residual != nullptr) v = __fadd_rn(v, p.residual[at]);
          y_base[at] = v;
        }
      }
    }
  }
}

// Launches the kernel for format F with tile C over args.
template <class F, class C, bool kBatched = false>
void launch_matmul_mma_tile(const MatmulArgs& args, cudaStream_t stream) {
  using L = MmaLayout<F, C>;
  const ActivationLayout layout = activation_layout(activation_format(args.format), args.n_in);
  MmaParams p;
  p.w = static_cast<const uint8_t*>(args.w);
  p.w_row_bytes = quant::row_bytes(args.format, args.n_in);
  p.n_out = args.n_out;
  p.n_in = args.n_in;
  p.act = static_cast<const uint8_t*>(args.act);
  p.act_stride = args.act_stride ? args.act_stride : layout.stride;
  p.qs_offset = static_cast<uint32_t>(layout.qs_offset);
  p.scale_offset = static_cast<uint32_t>(layout.scale_offset);
  p.sum_offset = static_cast<uint32_t>(layout.sum_offset);
  if constexpr (kIsSuperBlock<F>) {
    p.split_offset = static_cast<uint32_t>(F::kSubValues == 32 ? layout.split32_offset : layout.split16_offset);
  }
  p.n_rows = args.n_rows;
  p.y = args.y;
  p.y_stride = args.y_stride;
  p.bias = args.bias;
  p.residual = args.residual;
  p.w_batch_bytes = args.w_batch_bytes;
  p.act_batch_bytes = args.act_batch_bytes;
  p.y_batch_stride = args.y_batch_stride;
  p.bias_batch_stride = args.bias_batch_stride;
  p.batch_rows = args.batch_rows;
  allow_dynamic_smem(reinterpret_cast<const void*>(matmul_mma_kernel<F, C, kBatched>), L::kSmemBytes);
  const dim3 grid((args.n_out + C::kM - 1) / C::kM, (args.n_rows + C::kN - 1) / C::kN, args.n_batch);
  launch_kernel(matmul_mma_kernel<F, C, kBatched>, grid, dim3(C::kThreads), L::kSmemBytes, stream, p);
}

// The tile configurations (every choice gives the same bits).
using MmaTileLarge = MmaConfig<4, 2, 2, 8, 1>;   // 128 outputs x 128 rows, 8 warps
using MmaTileMedium = MmaConfig<4, 2, 2, 4, 1>;  // 128 x 64
using MmaTileSquare = MmaConfig<2, 2, 2, 4, 2>;  // 64 x 64, 2 blocks per SM
using MmaTileThin = MmaConfig<2, 2, 1, 4, 3>;    // 32 x 64, 3 blocks per SM
using MmaTileSmall = MmaConfig<4, 1, 1, 2, 3>;   // 64 x 16
using MmaTileTiny = MmaConfig<4, 1, 1, 1, 3>;    // 64 x 8
// Segments split over 4 slices of warps (super-block formats), for short
// batches whose blocks would otherwise walk long rows alone.
using MmaTileSplitTiny = MmaConfig<2, 1, 2, 1, 1, 4>;   // 64 x 8, 4 slices of 2 warps
using MmaTileSplitSmall = MmaConfig<2, 1, 2, 4, 1, 4>;  // 64 x 32
using MmaTileSplitThin = MmaConfig<1, 2, 2, 4, 1, 4>;   // 32 x 64

// Picks the tile. Formats of 16-value sub-blocks (Q2_K, Q3_K, Q6_K: two
// k16 steps per 32 values, so a block's walk along a row is slow) at up to
// 64 rows: the shortest estimated critical path (waves x the block's walk,
// measured per shape on an H100 with Q6_K). Otherwise the most efficient
// unsplit shape (outputs x rows per SM and second, measured with Q4_K, times
// the share of its rows in use) among those that give three quarters of the
// SMs a block; without such a tile, the one with the most blocks.
MmaTile choose_mma_tile(uint32_t n_out, uint32_t n_rows, uint32_t n_in, bool sub16);

template <class F>
void launch_matmul_mma_format(const MatmulArgs& args, MmaTile tile, cudaStream_t stream) {
  if (args.n_out == 0 || args.n_rows == 0) return;
  // Batched and grouped products (per-head matrices, experts on their
  // rows): two tiles only, for up to 16 rows each and for more.
  if (args.n_batch > 1) {
    if (args.n_rows <= 16) {
      launch_matmul_mma_tile<F, MmaTileSmall, true>(args, stream);
    } else {
      launch_matmul_mma_tile<F, MmaTileSquare, true>(args, stream);
    }
    return;
  }
  if (tile == MmaTile::Auto) {
    bool sub16 = false;
    if constexpr (kIsSuperBlock<F>) sub16 = F::kSubValues == 16;
    tile = choose_mma_tile(args.n_out, args.n_rows, args.n_in, sub16);
  }
  if constexpr (kIsSuperBlock<F>) {
    switch (tile) {
      case MmaTile::SplitTiny: launch_matmul_mma_tile<F, MmaTileSplitTiny>(args, stream); return;
      case MmaTile::SplitSmall: launch_matmul_mma_tile<F, MmaTileSplitSmall>(args, stream); return;
      case MmaTile::SplitThin: launch_matmul_mma_tile<F, MmaTileSplitThin>(args, stream); return;
      default: break;
    }
  } else {
    // The 32-value formats keep one f32 chain through every block: their
    // nearest unsplit shapes.
    if (tile == MmaTile::SplitTiny) tile = MmaTile::Tiny;
    if (tile == MmaTile::SplitSmall) tile = MmaTile::Small;
    if (tile == MmaTile::SplitThin) tile = MmaTile::Thin;
  }
  switch (tile) {
    case MmaTile::Large: launch_matmul_mma_tile<F, MmaTileLarge>(args, stream); break;
    case MmaTile::Medium: launch_matmul_mma_tile<F, MmaTileMedium>(args, stream); break;
    case MmaTile::Square: launch_matmul_mma_tile<F, MmaTileSquare>(args, stream); break;
    case MmaTile::Thin: launch_matmul_mma_tile<F, MmaTileThin>(args, stream); break;
    case MmaTile::Small: launch_matmul_mma_tile<F, MmaTileSmall>(args, stream); break;
    default: launch_matmul_mma_tile<F, MmaTileTiny>(args, stream); break;
  }
}

// Per family of formats (matmul_mma_q32.cu, matmul_mma_kquants.cu); each
// returns false for a format it does not handle.
bool launch_matmul_mma_q32(const MatmulArgs& args, MmaTile tile, cudaStream_t stream);
bool launch_matmul_mma_kquants(const MatmulArgs& args, MmaTile tile, cudaStream_t stream);

}  // namespace lamina::cudaexec::detail

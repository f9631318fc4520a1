// One warp's quantization of one activation block (Q8_0/Q8_1: 32 values, a
// value per lane; Q8_K: 256 values, 8 consecutive per lane), byte-identical
// to quant::quantize_row_ref: the same max, the same IEEE divisions and
// products, the same rounding (half away from zero for Q8_0/Q8_1, half to
// even for Q8_K) and round-to-nearest-even f16 fields. Writes the GGUF block
// and the unpacked copy of activation_layout.h. Shared by the stand-alone
// quantization and the norm that quantizes its own output.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "activation_layout.h"
#include "lamina/quant/blocks.h"

namespace lamina::cudaexec::detail {

inline constexpr int kQ8KPerLane = quant::kQK_K / 32;

// Q8_0 (kWithSum false) and Q8_1: v is value `lane` of block b of `row`.
template <bool kWithSum>
__device__ __forceinline__ void quantize_q8_32_block(float v, int lane, uint8_t* row, const ActivationLayout& layout,
                                                     uint32_t b) {
  using Block = std::conditional_t<kWithSum, quant::BlockQ8_1, quant::BlockQ8_0>;
  float amax = fabsf(v);
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, offset));
  const float d = __fdiv_rn(amax, 127.0f);
  const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  const int q = static_cast<int>(roundf(__fmul_rn(v, id)));
  const __half d_half = __float2half_rn(d);

  auto* blk = reinterpret_cast<Block*>(row) + b;
  blk->qs[lane] = static_cast<int8_t>(q);
  row[layout.qs_offset + b * quant::kQK + lane] = static_cast<uint8_t>(static_cast<int8_t>(q));
  int sum = q;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, offset);
  if (lane == 0) {
    blk->d = __half_as_ushort(d_half);
    if constexpr (kWithSum) {
      blk->s = __half_as_ushort(__float2half_rn(__fmul_rn(__int2float_rn(sum), d)));
    }
    reinterpret_cast<float*>(row + layout.scale_offset)[b] = __half2float(d_half);
    reinterpret_cast<int*>(row + layout.sum_offset)[b] = sum;
  }
}

// Q8_K: v holds values 8 * lane .. 8 * lane + 7 of block b of `row`.
__device__ __forceinline__ void quantize_q8_k_block(const float (&v)[kQ8KPerLane], int lane, uint8_t* row,
                                                    const ActivationLayout& layout, uint32_t b) {
  constexpr int kPerLane = kQ8KPerLane;
  // The value of largest magnitude, the first one on ties, sign kept.
  float amax = 0.0f;
  float max = 0.0f;
  int first = quant::kQK_K;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    if (amax < fabsf(v[k])) {
      amax = fabsf(v[k]);
      max = v[k];
      first = kPerLane * lane + k;
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other_amax = __shfl_xor_sync(0xFFFFFFFFu, amax, offset);
    const float other_max = __shfl_xor_sync(0xFFFFFFFFu, max, offset);
    const int other_first = __shfl_xor_sync(0xFFFFFFFFu, first, offset);
    if (other_amax > amax || (other_amax == amax && other_first < first)) {
      amax = other_amax;
      max = other_max;
      first = other_first;
    }
  }

  auto* blk = reinterpret_cast<quant::BlockQ8_K*>(row) + b;
  int q[kPerLane];
  float d = 0.0f;
  if (max == 0.0f) {
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) q[k] = 0;
  } else {
    const float iscale = __fdiv_rn(-127.0f, max);
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) q[k] = min(127, __float2int_rn(__fmul_rn(iscale, v[k])));
    d = __fdiv_rn(1.0f, iscale);
  }

  uint32_t packed[2] = {0, 0};
  int sum = 0;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    packed[k / 4] |= static_cast<uint32_t>(q[k] & 0xFF) << (8 * (k % 4));
    sum += q[k];
  }
  sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 1);  // lanes 2g, 2g + 1 hold group g's 16 values
  const int sum32 = sum + __shfl_xor_sync(0xFFFFFFFFu, sum, 2);  // lanes 4j .. 4j + 3: values 32j .. 32j + 31
  auto* qs_words = reinterpret_cast<uint32_t*>(blk->qs + kPerLane * lane);
  qs_words[0] = packed[0];
  qs_words[1] = packed[1];
  *reinterpret_cast<uint2*>(row + layout.qs_offset + b * quant::kQK_K + kPerLane * lane) =
      make_uint2(packed[0], packed[1]);
  if ((lane & 1) == 0) {
    blk->bsums[lane / 2] = static_cast<int16_t>(sum);
    reinterpret_cast<int*>(row + layout.sum_offset)[b * 16 + lane / 2] = sum;
    uint8_t* split16 = row + layout.split16_offset + b * 32;
    split16[lane / 2] = static_cast<uint8_t>(static_cast<int8_t>(sum >> 6));
    split16[16 + lane / 2] = static_cast<uint8_t>(sum & 63);
  }
  if ((lane & 3) == 0) {
    uint8_t* split32 = row + layout.split32_offset + b * 32;
    split32[lane / 4] = static_cast<uint8_t>(static_cast<int8_t>(sum32 >> 6));
    split32[16 + lane / 4] = static_cast<uint8_t>(sum32 & 63);
  }
  if (lane == 0) {
    blk->d = d;
    reinterpret_cast<float*>(row + layout.scale_offset)[b] = d;
  }
}

}  // namespace lamina::cudaexec::detail

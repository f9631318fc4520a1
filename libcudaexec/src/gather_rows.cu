// Rows of a weight matrix (e.g. the token embedding) dequantized to f32 on
// the device, bit-identical to quant::dequantize_row_ref: each value is
// formed by the reference's operations in the reference's order, with
// explicit _rn intrinsics so that nothing is contracted into a multiply-add.
#include <string>
#include <type_traits>

#include "block_decode.cuh"
#include "cuda_check.h"
#include "launch.cuh"
#include "lamina/quant/blocks.h"
#include "matmul.h"

namespace lamina::cudaexec::detail {
namespace {

using namespace quant;

template <class Block>
__device__ __forceinline__ const uint8_t* block_of(const uint8_t* row, uint32_t i, uint32_t elems) {
  return row + (i / elems) * sizeof(Block);
}

// The nibble of value j (0..31) of a 32-value block whose byte l holds
// values l (low) and l + 16 (high).
__device__ __forceinline__ int nibble32(const uint8_t* qs, uint32_t j) {
  return j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
}
__device__ __forceinline__ int q5_value(const uint8_t* qs, const uint8_t* qh, uint32_t j) {
  const uint32_t bits = load_u32_a2(qh);
  return nibble32(qs, j) | static_cast<int>(((bits >> j) & 1u) << 4);
}

template <QuantFormat F>
__device__ float dequantize_value(const uint8_t* row, uint32_t i) {
  if constexpr (F == QuantFormat::F32) {
    return reinterpret_cast<const float*>(row)[i];
  } else if constexpr (F == QuantFormat::F16) {
    return load_f16(row + 2 * i);
  } else if constexpr (F == QuantFormat::BF16) {
    return bf16_bits_to_float(load_u16(row + 2 * i));
  } else if constexpr (F == QuantFormat::Q4_0) {
    const uint8_t* b = block_of<BlockQ4_0>(row, i, kQK);
    return __fmul_rn(static_cast<float>(nibble32(b + 2, i % kQK) - 8), load_f16(b));
  } else if constexpr (F == QuantFormat::Q4_1) {
    const uint8_t* b = block_of<BlockQ4_1>(row, i, kQK);
    return __fadd_rn(__fmul_rn(static_cast<float>(nibble32(b + 4, i % kQK)), load_f16(b)), load_f16(b + 2));
  } else if constexpr (F == QuantFormat::Q5_0) {
    const uint8_t* b = block_of<BlockQ5_0>(row, i, kQK);
    return __fmul_rn(static_cast<float>(q5_value(b + 6, b + 2, i % kQK) - 16), load_f16(b));
  } else if constexpr (F == QuantFormat::Q5_1) {
    const uint8_t* b = block_of<BlockQ5_1>(row, i, kQK);
    return __fadd_rn(__fmul_rn(static_cast<float>(q5_value(b + 8, b + 4, i % kQK)), load_f16(b)), load_f16(b + 2));
  } else if constexpr (F == QuantFormat::Q8_0) {
    const uint8_t* b = block_of<BlockQ8_0>(row, i, kQK);
    return __fmul_rn(static_cast<float>(static_cast<int8_t>(b[2 + i % kQK])), load_f16(b));
  } else if constexpr (F == QuantFormat::IQ4_NL) {
    const uint8_t* b = block_of<BlockIQ4_NL>(row, i, kQK);
    return __fmul_rn(load_f16(b), iq4_value(nibble32(b + 2, i % kQK)));
  } else if constexpr (F == QuantFormat::MXFP4) {
    const uint8_t* b = block_of<BlockMXFP4>(row, i, kQK);
    return __fmul_rn(codebook_value<MXFP4Codebook>(nibble32(b + 1, i % kQK)), e8m0_half_to_float(b[0]));
  } else if constexpr (F == QuantFormat::Q2_K) {
    const auto* b = reinterpret_cast<const BlockQ2_K*>(block_of<BlockQ2_K>(row, i, kQK_K));
    const uint32_t k = i % kQK_K;
    const uint8_t sc = b->scales[k / 16];
    const float dl = __fmul_rn(half_bits_to_float(b->d), static_cast<float>(sc & 0xF));
    const float ml = __fmul_rn(half_bits_to_float(b->dmin), static_cast<float>(sc >> 4));
    const int q = (b->qs[(k / 128) * 32 + k % 32] >> (2 * ((k % 128) / 32))) & 3;
    return __fsub_rn(__fmul_rn(dl, static_cast<float>(q)), ml);
  } else if constexpr (F == QuantFormat::Q3_K) {
    const uint8_t* b = block_of<BlockQ3_K>(row, i, kQK_K);
    const uint32_t k = i % kQK_K;
    const int scale = q3k_scale(load_u32_a2(b + 96), load_u32_a2(b + 100), load_u32_a2(b + 104), k / 16);
    const float dl = __fmul_rn(load_f16(b + 108), static_cast<float>(scale));
    const int low = (b[32 + (k / 128) * 32 + k % 32] >> (2 * ((k % 128) / 32))) & 3;
    const bool high = (b[k % 32] >> (k / 32)) & 1;
    return __fmul_rn(dl, static_cast<float>(low - (high ? 0 : 4)));
  } else if constexpr (F == QuantFormat::Q4_K || F == QuantFormat::Q5_K) {
    using Block = std::conditional_t<F == QuantFormat::Q4_K, BlockQ4_K, BlockQ5_K>;
    const auto* b = reinterpret_cast<const Block*>(block_of<Block>(row, i, kQK_K));
    const uint32_t k = i % kQK_K;
    const int sub = static_cast<int>(k / 32);
    const KScales ks = unpack_k_scales(load_u32_a2(b->scales), load_u32_a2(b->scales + 4),
                                       load_u32_a2(b->scales + 8));
    const float dl = __fmul_rn(half_bits_to_float(b->d), static_cast<float>(k_scale(ks, sub)));
    const float ml = __fmul_rn(half_bits_to_float(b->dmin), static_cast<float>(k_min(ks, sub)));
    int q = (b->qs[(sub / 2) * 32 + k % 32] >> (4 * (sub % 2))) & 0xF;
    if constexpr (F == QuantFormat::Q5_K) q |= ((b->qh[k % 32] >> sub) & 1) << 4;
    return __fsub_rn(__fmul_rn(dl, static_cast<float>(q)), ml);
  } else if constexpr (F == QuantFormat::Q6_K) {
    const uint8_t* b = block_of<BlockQ6_K>(row, i, kQK_K);
    const uint32_t k = i % kQK_K;
    const uint32_t r = k % 128;
    const uint8_t* ql = b + (k / 128) * 64;
    const uint8_t* qh = b + 128 + (k / 128) * 32;
    const int low = (ql[r % 64] >> (4 * (r / 64))) & 0xF;
    const int high = (qh[r % 32] >> (2 * (r / 32))) & 3;
    const int q = (low | (high << 4)) - 32;
    const float scale = static_cast<float>(static_cast<int8_t>(b[192 + k / 16]));
    return __fmul_rn(__fmul_rn(load_f16(b + 208), scale), static_cast<float>(q));
  } else if constexpr (F == QuantFormat::IQ4_XS) {
    const auto* b = reinterpret_cast<const BlockIQ4_XS*>(block_of<BlockIQ4_XS>(row, i, kQK_K));
    const uint32_t k = i % kQK_K;
    const int sub = static_cast<int>(k / 32);
    const int low = (b->scales_l[sub / 2] >> (4 * (sub % 2))) & 0xF;
    const int high = (b->scales_h >> (2 * sub)) & 3;
    const float dl = __fmul_rn(half_bits_to_float(b->d), static_cast<float>((low | (high << 4)) - 32));
    return __fmul_rn(dl, iq4_value(nibble32(b->qs + sub * 16, k % 32)));
  }
}

template <QuantFormat F>
__global__ void gather_rows_kernel(const uint8_t* w, std::size_t row_bytes, uint32_t n_cols, const int32_t* ids,
                                   float scale, float* out) {
  enter_dependent_kernel();
  const uint32_t r = blockIdx.y;
  const uint8_t* row = w + static_cast<std::size_t>(ids[r]) * row_bytes;
  float* dst = out + static_cast<std::size_t>(r) * n_cols;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n_cols; i += gridDim.x * blockDim.x) {
    dst[i] = __fmul_rn(dequantize_value<F>(row, i), scale);
  }
}

template <QuantFormat F>
void launch(const void* w, uint32_t n_cols, const int32_t* ids, uint32_t n_rows, float scale, float* out,
            cudaStream_t stream) {
  constexpr uint32_t kThreads = 256;
  const uint32_t blocks_x = min((n_cols + kThreads - 1) / kThreads, 32u);
  launch_kernel(gather_rows_kernel<F>, dim3(blocks_x, n_rows), dim3(kThreads), 0, stream,
                static_cast<const uint8_t*>(w), quant::row_bytes(F, n_cols), n_cols, ids, scale, out);
}

}  // namespace

void gather_rows(QuantFormat format, const void* w, uint32_t n_cols, const int32_t* ids, uint32_t n_rows,
                 float scale, float* out, cudaStream_t stream) {
  if (n_rows == 0 || n_cols == 0) return;
  using F = QuantFormat;
  switch (format) {
    case F::F32: return launch<F::F32>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::F16: return launch<F::F16>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::BF16: return launch<F::BF16>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::Q4_0: return launch<F::Q4_0>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::Q4_1: return launch<F::Q4_1>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::Q5_0: return launch<F::Q5_0>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::Q5_1: return launch<F::Q5_1>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::Q8_0: return launch<F::Q8_0>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::Q2_K: return launch<F::Q2_K>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::Q3_K: return launch<F::Q3_K>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::Q4_K: return launch<F::Q4_K>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::Q5_K: return launch<F::Q5_K>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::Q6_K: return launch<F::Q6_K>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::IQ4_NL: return launch<F::IQ4_NL>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::MXFP4: return launch<F::MXFP4>(w, n_cols, ids, n_rows, scale, out, stream);
    case F::IQ4_XS: return launch<F::IQ4_XS>(w, n_cols, ids, n_rows, scale, out, stream);
    default: throw CudaError("gather_rows: no GPU dequantizer for " + std::string(quant::format_traits(format).name));
  }
}

}  // namespace lamina::cudaexec::detail

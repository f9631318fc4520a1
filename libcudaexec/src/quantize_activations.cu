// Activation rows to Q8_0, Q8_1 or Q8_K on the device, byte-identical to
// quant::quantize_row_ref (quantize_block.cuh). Each block is one warp.
#include "activation_layout.h"
#include "cuda_check.h"
#include "launch.cuh"
#include "lamina/quant/blocks.h"
#include "matmul.h"
#include "quantize_block.cuh"

namespace lamina::cudaexec::detail {
namespace {

constexpr int kWarpsPerBlock = 8;

struct QuantizeParams {
  const float* x = nullptr;
  std::size_t x_stride = 0;
  uint32_t n_in = 0;
  uint32_t n_rows = 0;
  uint8_t* out = nullptr;
  ActivationLayout layout;
};

// Q8_0 (kWithSum false) and Q8_1: lane j quantizes value j of the block.
template <bool kWithSum>
__global__ void __launch_bounds__(kWarpsPerBlock * 32) quantize_q8_32_kernel(const QuantizeParams p) {
  enter_dependent_kernel();
  const uint32_t n_blocks = p.n_in / quant::kQK;
  const uint32_t warp = blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5);
  if (warp >= n_blocks * p.n_rows) return;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const uint32_t r = warp / n_blocks;
  const uint32_t b = warp % n_blocks;
  const float v = p.x[r * p.x_stride + b * quant::kQK + lane];
  quantize_q8_32_block<kWithSum>(v, lane, p.out + r * p.layout.stride, p.layout, b);
}

// Q8_K: lane j quantizes values 8j .. 8j + 7 of the 256.
__global__ void __launch_bounds__(kWarpsPerBlock * 32) quantize_q8_k_kernel(const QuantizeParams p) {
  enter_dependent_kernel();
  const uint32_t n_blocks = p.n_in / quant::kQK_K;
  const uint32_t warp = blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5);
  if (warp >= n_blocks * p.n_rows) return;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const uint32_t r = warp / n_blocks;
  const uint32_t b = warp % n_blocks;
  const float* x = p.x + r * p.x_stride + b * quant::kQK_K + kQ8KPerLane * lane;
  float v[kQ8KPerLane];
#pragma unroll
  for (int k = 0; k < kQ8KPerLane; ++k) v[k] = x[k];
  quantize_q8_k_block(v, lane, p.out + r * p.layout.stride, p.layout, b);
}

__global__ void copy_rows_kernel(const QuantizeParams p) {
  enter_dependent_kernel();
  const uint32_t r = blockIdx.y;
  auto* dst = reinterpret_cast<float*>(p.out + r * p.layout.stride);
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n_in; i += gridDim.x * blockDim.x) {
    dst[i] = p.x[r * p.x_stride + i];
  }
}

}  // namespace

void quantize_activations(QuantFormat act_format, const float* x, std::size_t x_stride, uint32_t n_in,
                          uint32_t n_rows, void* out, cudaStream_t stream) {
  QuantizeParams p;
  p.x = x;
  p.x_stride = x_stride;
  p.n_in = n_in;
  p.n_rows = n_rows;
  p.out = static_cast<uint8_t*>(out);
  p.layout = activation_layout(act_format, n_in);
  if (n_rows == 0 || n_in == 0) return;
  const uint32_t threads = kWarpsPerBlock * 32;
  switch (act_format) {
    case QuantFormat::F32: {
      const uint32_t blocks_x = min((n_in + threads - 1) / threads, 64u);
      launch_kernel(copy_rows_kernel, dim3(blocks_x, n_rows), dim3(threads), 0, stream, p);
      break;
    }
    case QuantFormat::Q8_0:
    case QuantFormat::Q8_1: {
      const uint32_t warps = n_in / quant::kQK * n_rows;
      const uint32_t grid = (warps + kWarpsPerBlock - 1) / kWarpsPerBlock;
      if (act_format == QuantFormat::Q8_0) {
        launch_kernel(quantize_q8_32_kernel<false>, dim3(grid), dim3(threads), 0, stream, p);
      } else {
        launch_kernel(quantize_q8_32_kernel<true>, dim3(grid), dim3(threads), 0, stream, p);
      }
      break;
    }
    case QuantFormat::Q8_K: {
      const uint32_t warps = n_in / quant::kQK_K * n_rows;
      launch_kernel(quantize_q8_k_kernel, dim3((warps + kWarpsPerBlock - 1) / kWarpsPerBlock), dim3(threads), 0,
                    stream, p);
      break;
    }
    default: throw CudaError("quantize_activations: unsupported activation format");
  }
}

}  // namespace lamina::cudaexec::detail

// Dispatch of the matrix products by weight format, and the activation row
// geometry the kernels agree on.
#include "matmul.h"

#include <stdexcept>
#include <string>

#include "activation_layout.h"
#include "lamina/quant/blocks.h"
#include "matmul_mma.h"
#include "matvec_kernel.cuh"

namespace lamina::cudaexec::detail {

QuantFormat activation_format(QuantFormat weight_format) {
  switch (weight_format) {
    case QuantFormat::F32:
    case QuantFormat::F16:
    case QuantFormat::BF16: return QuantFormat::F32;
    default: return quant::format_traits(weight_format).activation;
  }
}

ActivationLayout activation_layout(QuantFormat act_format, uint32_t n_in) {
  ActivationLayout l;
  if (act_format == QuantFormat::F32) {
    l.blocks_bytes = static_cast<std::size_t>(n_in) * sizeof(float);
    l.stride = align16(l.blocks_bytes);
    return l;
  }
  if (act_format != QuantFormat::Q8_0 && act_format != QuantFormat::Q8_1 && act_format != QuantFormat::Q8_K) {
    throw std::invalid_argument("activation_layout: " + std::string(quant::format_traits(act_format).name) +
                                " is not an activation format");
  }
  l.blocks_bytes = quant::row_bytes(act_format, n_in);  // throws on a partial block
  const std::size_t n_blocks = n_in / quant::format_traits(act_format).block_elems;
  const std::size_t n_sums = act_format == QuantFormat::Q8_K ? n_in / 16 : n_blocks;
  l.qs_offset = align16(l.blocks_bytes);
  l.scale_offset = l.qs_offset + n_in;
  l.sum_offset = l.scale_offset + n_blocks * sizeof(float);
  l.stride = align16(l.sum_offset + n_sums * sizeof(int32_t));
  return l;
}

std::size_t activation_row_stride(QuantFormat act_format, uint32_t n_in) {
  return activation_layout(act_format, n_in).stride;
}

void matmul(const MatmulArgs& args, cudaStream_t stream) {
  // Many activation rows: the tensor-core kernel (bit-identical results).
  if (prefer_mma(args.n_rows, args.n_out) && matmul_mma(args, stream)) return;
  if (launch_matmul_q32(args, stream) || launch_matmul_kquants(args, stream) || launch_matmul_float(args, stream)) {
    return;
  }
  throw CudaError("matmul: no GPU kernel for weight format " +
                  std::string(quant::format_traits(args.format).name));
}

void matmul_group(const MatmulArgs* args, int n, cudaStream_t stream) {
  if (n < 1 || n > kMaxMatmulGroup) throw std::invalid_argument("matmul_group: 1 to 4 matrices");
  for (int i = 0; i < n; ++i) matmul(args[i], stream);
}

}  // namespace lamina::cudaexec::detail

// Dispatch of the matrix products by weight format, and the activation row
// geometry the kernels agree on.
#include "matmul.h"

#include <stdexcept>
#include <string>

#include "activation_layout.h"
#include "lamina/quant/blocks.h"
#include "matmul_mma.h"
#include "matvec_quant.cuh"

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
  if (act_format == QuantFormat::Q8_K) {
    l.split32_offset = l.stride;
    l.split16_offset = l.split32_offset + n_blocks * 32;
    l.stride = l.split16_offset + n_blocks * 32;
  }
  return l;
}

std::size_t activation_row_stride(QuantFormat act_format, uint32_t n_in) {
  return activation_layout(act_format, n_in).stride;
}

MatvecParams matvec_params(const MatmulArgs& args, uint32_t elems_per_unit) {
  const ActivationLayout layout = activation_layout(activation_format(args.format), args.n_in);
  MatvecParams p;
  p.w = static_cast<const uint8_t*>(args.w);
  p.w_row_bytes = quant::row_bytes(args.format, args.n_in);
  p.n_out = args.n_out;
  p.n_units = args.n_in / elems_per_unit;
  p.act.base = static_cast<const uint8_t*>(args.act);
  p.act.stride = args.act_stride ? args.act_stride : layout.stride;
  p.act.qs_offset = static_cast<uint32_t>(layout.qs_offset);
  p.act.scale_offset = static_cast<uint32_t>(layout.scale_offset);
  p.act.sum_offset = static_cast<uint32_t>(layout.sum_offset);
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
  return p;
}

void matmul(const MatmulArgs& args, cudaStream_t stream) {
  if (args.n_out == 0 || args.n_rows == 0 || args.n_batch == 0) return;
  if (args.n_batch > 1 && args.residual) throw std::invalid_argument("matmul: a batched product takes no residual");
  // Quantized weights: one row through the matvec, more through the tensor
  // cores (the same bits either way); float weights through their matvec.
  if (args.n_rows > 1 && matmul_mma(args, stream)) return;
  if ((args.n_rows == 1 && (launch_matmul_q32(args, stream) || launch_matmul_kquants(args, stream))) ||
      launch_matmul_float(args, stream)) {
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

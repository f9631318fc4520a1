// Tensor-core products of the 32-value block formats (Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0, IQ4_NL, MXFP4): each block one k32 MMA, scaled as weight_formats.cuh
// says.
#include "matmul_mma_kernel.cuh"

namespace lamina::cudaexec::detail {

bool launch_matmul_mma_q32(const MatmulArgs& args, MmaTile tile, cudaStream_t stream) {
  switch (args.format) {
    case QuantFormat::Q4_0: launch_matmul_mma_format<FmtQ4_0>(args, tile, stream); return true;
    case QuantFormat::Q4_1: launch_matmul_mma_format<FmtQ4_1>(args, tile, stream); return true;
    case QuantFormat::Q5_0: launch_matmul_mma_format<FmtQ5_0>(args, tile, stream); return true;
    case QuantFormat::Q5_1: launch_matmul_mma_format<FmtQ5_1>(args, tile, stream); return true;
    case QuantFormat::Q8_0: launch_matmul_mma_format<FmtQ8_0>(args, tile, stream); return true;
    case QuantFormat::IQ4_NL: launch_matmul_mma_format<FmtIQ4_NL>(args, tile, stream); return true;
    case QuantFormat::MXFP4: launch_matmul_mma_format<FmtMXFP4>(args, tile, stream); return true;
    default: return false;
  }
}

}  // namespace lamina::cudaexec::detail

// Tensor-core products of the super-block formats (Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K, IQ4_XS): one MMA per sub-block (k32 for 32-value sub-blocks, k16 for
// 16-value ones), the sub-block scales applied in integers, the minima
// through two small MMAs per super-block.
#include "matmul_mma_kernel.cuh"

namespace lamina::cudaexec::detail {

bool launch_matmul_mma_kquants(const MatmulArgs& args, MmaTile tile, cudaStream_t stream) {
  switch (args.format) {
    case QuantFormat::Q2_K: launch_matmul_mma_format<FmtQ2_K>(args, tile, stream); return true;
    case QuantFormat::Q3_K: launch_matmul_mma_format<FmtQ3_K>(args, tile, stream); return true;
    case QuantFormat::Q4_K: launch_matmul_mma_format<FmtQ4_K>(args, tile, stream); return true;
    case QuantFormat::Q5_K: launch_matmul_mma_format<FmtQ5_K>(args, tile, stream); return true;
    case QuantFormat::Q6_K: launch_matmul_mma_format<FmtQ6_K>(args, tile, stream); return true;
    case QuantFormat::IQ4_XS: launch_matmul_mma_format<FmtIQ4_XS>(args, tile, stream); return true;
    default: return false;
  }
}

}  // namespace lamina::cudaexec::detail

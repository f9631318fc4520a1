// Dispatch of the tensor-core matrix products by weight format.
#include "matmul_mma.h"

#include "matmul_mma_kernel.cuh"

namespace lamina::cudaexec::detail {

bool matmul_mma(const MatmulArgs& args, cudaStream_t stream, MmaTile tile) {
  if (args.n_in == 0) return false;
  return launch_matmul_mma_q32(args, tile, stream) || launch_matmul_mma_kquants(args, tile, stream);
}

}  // namespace lamina::cudaexec::detail

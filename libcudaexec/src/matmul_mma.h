// The tensor-core path of matmul() for two or more activation rows: the
// same bits as the one-row matvec gives each row (weight_formats.cuh), at a
// fraction of the weight traffic and on the tensor cores.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "matmul.h"

namespace lamina::cudaexec::detail {

// Tile shapes of the tensor-core kernel (matmul_mma_kernel.cuh); Auto picks
// by the number of rows.
enum class MmaTile { Auto, Large, Medium, Square, Thin, Small, Tiny, SplitTiny, SplitSmall, SplitThin };

// Runs args through the tensor-core kernel; false (nothing launched) for a
// format it does not cover (the float formats).
bool matmul_mma(const MatmulArgs& args, cudaStream_t stream, MmaTile tile = MmaTile::Auto);

}  // namespace lamina::cudaexec::detail

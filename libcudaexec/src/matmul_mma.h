// The tensor-core path of matmul() for many activation rows (prefill): same
// results, bit for bit, as the matvec kernels, at a fraction of the weight
// traffic (each weight tile is decoded once per 32 rows instead of 8).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "matmul.h"

namespace lamina::cudaexec::detail {

// From this many activation rows on, matmul() takes the tensor-core path
// for the formats it covers. Measured on an H200: at 16 rows the matvec is
// faster everywhere, at 32 only on some shapes, at 64 the tensor cores win
// on most (not on Q8_0, nor 896 x 896), at 512 on all, by 1.5x to 4x.
inline constexpr uint32_t kMmaMinRows = 64;

// Runs args through the tensor-core kernel; false (nothing launched) for a
// format it does not cover.
bool matmul_mma(const MatmulArgs& args, cudaStream_t stream);

}  // namespace lamina::cudaexec::detail

// The tensor-core path of matmul() for many activation rows (prefill): same
// results, bit for bit, as the matvec kernels, at a fraction of the weight
// traffic (each weight tile is decoded once per 32 rows instead of 8).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "matmul.h"

namespace lamina::cudaexec::detail {

// Whether matmul() takes the tensor-core path for n_rows activation rows and
// n_out outputs (the results are the same bits either way). Measured on an
// H100 (matmul_mma_bench): the tensor-core kernel walks the whole row per
// block, so it needs many blocks: at 32 rows it wins on 14336 outputs (172
// vs 267 us, Q4_K) and loses on 4096 (172 vs 91 us); at 64 rows on 4096
// outputs the two are even (185 vs 172 us); from 128 rows it wins on all.
inline constexpr uint32_t kMmaMinRows = 128;
inline constexpr bool prefer_mma(uint32_t n_rows, uint32_t n_out) {
  return n_rows >= kMmaMinRows || (n_rows >= 32 && n_out >= 8192);
}

// Runs args through the tensor-core kernel; false (nothing launched) for a
// format it does not cover.
bool matmul_mma(const MatmulArgs& args, cudaStream_t stream);

}  // namespace lamina::cudaexec::detail

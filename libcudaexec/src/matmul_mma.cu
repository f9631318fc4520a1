// Dispatch of the tensor-core matrix products by weight format.
#include "matmul_mma.h"

#include "cuda_check.h"
#include "matmul_mma_kernel.cuh"

namespace lamina::cudaexec::detail {

namespace {

int sm_count() {
  int device = 0;
  LAMINA_CUDA_CHECK(cudaGetDevice(&device));
  int n = 0;
  LAMINA_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  return n;
}

}  // namespace

MmaTile choose_mma_tile(uint32_t n_out, uint32_t n_rows) {
  struct Shape {
    MmaTile tile;
    uint32_t m, n, blocks_per_sm;
    double efficiency;  // output x row x value products per microsecond and SM (Q4_K, H100)
  };
  static constexpr Shape kShapes[] = {
      {MmaTile::Large, 128, 128, 1, 987e3}, {MmaTile::Medium, 128, 64, 1, 839e3}, {MmaTile::Square, 64, 64, 2, 839e3},
      {MmaTile::Thin, 32, 64, 3, 605e3},    {MmaTile::Small, 64, 16, 3, 491e3},   {MmaTile::Tiny, 64, 8, 3, 328e3},
  };
  const auto sms = static_cast<uint64_t>(sm_count());
  MmaTile best = MmaTile::Tiny, most = MmaTile::Tiny;
  double best_rate = 0.0;
  uint64_t most_blocks = 0;
  for (const Shape& s : kShapes) {
    const uint64_t blocks = uint64_t{(n_out + s.m - 1) / s.m} * ((n_rows + s.n - 1) / s.n);
    const double used = static_cast<double>(n_rows) / static_cast<double>(((n_rows + s.n - 1) / s.n) * s.n);
    // Three quarters of the SMs busy already beats a second, smaller tile.
    if (4 * blocks >= 3 * sms && s.efficiency * used > best_rate) {
      best_rate = s.efficiency * used;
      best = s.tile;
    }
    if (blocks > most_blocks) {
      most_blocks = blocks;
      most = s.tile;
    }
  }
  return best_rate > 0.0 ? best : most;
}

bool matmul_mma(const MatmulArgs& args, cudaStream_t stream, MmaTile tile) {
  if (args.n_in == 0) return false;
  return launch_matmul_mma_q32(args, tile, stream) || launch_matmul_mma_kquants(args, tile, stream);
}

}  // namespace lamina::cudaexec::detail

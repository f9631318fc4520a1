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

MmaTile choose_mma_tile(uint32_t n_out, uint32_t n_rows, uint32_t n_in, bool sub16) {
  struct Shape {
    MmaTile tile;
    uint32_t m, n, blocks_per_sm, slices;
    double efficiency;  // output x row x value products per microsecond and SM (Q4_K, H100)
    double walk_us;     // one block's time per segment (per group of `slices`), 8 rows (Q6_K, H100)
  };
  static constexpr Shape kShapes[] = {
      {MmaTile::Large, 128, 128, 1, 1, 987e3, 7.7},  {MmaTile::Medium, 128, 64, 1, 1, 839e3, 5.6},
      {MmaTile::Square, 64, 64, 2, 1, 839e3, 4.0},   {MmaTile::Thin, 32, 64, 3, 1, 605e3, 3.4},
      {MmaTile::Small, 64, 16, 3, 1, 491e3, 3.1},    {MmaTile::Tiny, 64, 8, 3, 1, 328e3, 2.9},
      {MmaTile::SplitTiny, 64, 8, 1, 4, 0.0, 6.9},   {MmaTile::SplitSmall, 64, 32, 1, 4, 0.0, 8.1},
      {MmaTile::SplitThin, 32, 64, 1, 4, 0.0, 8.1},
  };
  const auto sms = static_cast<uint64_t>(sm_count());
  auto blocks_of = [&](const Shape& s) { return uint64_t{(n_out + s.m - 1) / s.m} * ((n_rows + s.n - 1) / s.n); };
  if (sub16 && n_rows <= 64) {
    // Short batches are latency-bound: the fewest block walks in sequence.
    const uint32_t n_seg = (n_in + 255) / 256;
    MmaTile best = MmaTile::Tiny;
    double best_us = 0.0;
    for (const Shape& s : kShapes) {
      const uint64_t waves = (blocks_of(s) + sms * s.blocks_per_sm - 1) / (sms * s.blocks_per_sm);
      const double us = static_cast<double>(waves) * ((n_seg + s.slices - 1) / s.slices) * s.walk_us;
      if (best_us == 0.0 || us < best_us) {
        best_us = us;
        best = s.tile;
      }
    }
    return best;
  }
  MmaTile best = MmaTile::Tiny, most = MmaTile::Tiny;
  double best_rate = 0.0;
  uint64_t most_blocks = 0;
  for (const Shape& s : kShapes) {
    if (s.slices != 1) continue;
    const uint64_t blocks = blocks_of(s);
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

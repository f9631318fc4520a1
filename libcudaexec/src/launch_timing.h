// Median time of one launch of a kernel, for the benchmark entry points:
// launches timed back to back in batches with device events (so the figure
// is the kernel's, not the host's launch latency), after a warm-up.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda_check.h"

namespace lamina::cudaexec::detail {

template <typename Launch>
double median_launch_us(Launch&& launch, int warmup, int batch, int batches) {
  for (int i = 0; i < warmup; ++i) launch();
  cudaEvent_t start, stop;
  LAMINA_CUDA_CHECK(cudaEventCreate(&start));
  LAMINA_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> per_launch_us;
  for (int b = 0; b < batches; ++b) {
    LAMINA_CUDA_CHECK(cudaEventRecord(start, nullptr));
    for (int i = 0; i < batch; ++i) launch();
    LAMINA_CUDA_CHECK(cudaEventRecord(stop, nullptr));
    LAMINA_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    LAMINA_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    per_launch_us.push_back(1000.0 * ms / batch);
  }
  LAMINA_CUDA_CHECK(cudaEventDestroy(start));
  LAMINA_CUDA_CHECK(cudaEventDestroy(stop));
  std::nth_element(per_launch_us.begin(), per_launch_us.begin() + batches / 2, per_launch_us.end());
  return per_launch_us[static_cast<std::size_t>(batches / 2)];
}

}  // namespace lamina::cudaexec::detail

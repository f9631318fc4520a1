// Timing of matmul() for many activation rows (prefill shapes), for the
// benchmark: device-resident weights rotated over copies larger than the L2
// cache, back-to-back launches timed with events.
#include <algorithm>
#include <vector>

#include "activation_layout.h"
#include "cuda_check.h"
#include "device_memory.h"
#include "launch_timing.h"
#include "lamina/cudaexec/kernel_check.h"
#include "matmul.h"
#include "matmul_mma.h"
#include "matvec_kernel.cuh"

namespace lamina::cudaexec {
using detail::DeviceAllocation;

double time_matmul_us(quant::QuantFormat weight_format, const void* w, uint32_t n_out, uint32_t n_in,
                      uint32_t n_rows, int reps, int tile) {
  int device = 0;
  LAMINA_CUDA_CHECK(cudaGetDevice(&device));
  int l2_bytes = 0;
  LAMINA_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  const std::size_t w_bytes = quant::row_bytes(weight_format, n_in) * n_out;
  const std::size_t copies = std::max<std::size_t>(2, (2 * static_cast<std::size_t>(l2_bytes)) / w_bytes + 1);
  DeviceAllocation w_dev(w_bytes * copies + 256, "benchmark weights");  // + the kernels' read slack
  for (std::size_t c = 0; c < copies; ++c) {
    LAMINA_CUDA_CHECK(cudaMemcpy(static_cast<uint8_t*>(w_dev.get()) + c * w_bytes, w, w_bytes, cudaMemcpyHostToDevice));
  }
  // Activation rows of varied values (not zeros), quantized on the device.
  std::vector<float> x(std::size_t{n_in} * n_rows);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37u) % 101u) / 50.0f - 1.0f;
  DeviceAllocation x_dev(x.size() * sizeof(float), "benchmark activations");
  LAMINA_CUDA_CHECK(cudaMemcpy(x_dev.get(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  const quant::QuantFormat af = detail::activation_format(weight_format);
  DeviceAllocation act(detail::activation_row_stride(af, n_in) * n_rows, "benchmark activations");
  detail::quantize_activations(af, static_cast<float*>(x_dev.get()), n_in, n_in, n_rows, act.get(), nullptr);
  DeviceAllocation y_dev(std::size_t{n_out} * n_rows * sizeof(float), "benchmark outputs");

  detail::MatmulArgs args;
  args.format = weight_format;
  args.n_in = n_in;
  args.n_out = n_out;
  args.act = act.get();
  args.n_rows = n_rows;
  args.y = static_cast<float*>(y_dev.get());
  args.y_stride = n_out;
  std::size_t next = 0;
  auto launch = [&] {
    args.w = static_cast<uint8_t*>(w_dev.get()) + (next++ % copies) * w_bytes;
    if (tile < 0 || !detail::matmul_mma(args, nullptr, static_cast<detail::MmaTile>(tile + 1))) {
      detail::matmul(args, nullptr);
    }
  };
  // Back-to-back launches timed in batches; the median batch gives the figure.
  constexpr int kBatch = 5;
  return detail::median_launch_us(launch, 5, kBatch, std::max(3, reps / kBatch));
}

}  // namespace lamina::cudaexec

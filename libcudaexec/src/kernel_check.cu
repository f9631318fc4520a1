// Host wrappers around single kernels, for the tests and the benchmark:
// upload, run on the default stream, download.
#include "lamina/cudaexec/kernel_check.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "activation_layout.h"
#include "cuda_check.h"
#include "launch_timing.h"
#include "matmul.h"
#include "matmul_mma.h"
#include "ops.h"

namespace lamina::cudaexec {
namespace {

using detail::activation_format;
using detail::activation_layout;

// Bytes after a weight matrix that the tensor-core kernels may read (whole
// 16-byte chunks around the last segment), as device_weights.cu leaves.
constexpr std::size_t kWeightSlack = 256;

// Device memory owned for the length of one check.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) LAMINA_CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  template <class T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  void upload(const void* src, std::size_t bytes) {
    if (bytes > 0) LAMINA_CUDA_CHECK(cudaMemcpy(ptr_, src, bytes, cudaMemcpyHostToDevice));
  }
  void download(void* dst, std::size_t bytes) const {
    if (bytes > 0) LAMINA_CUDA_CHECK(cudaMemcpy(dst, ptr_, bytes, cudaMemcpyDeviceToHost));
  }
  // Fills with 0xFF bytes (NaN as f32), so an unwritten output shows.
  void poison() {
    if (bytes_ > 0) LAMINA_CUDA_CHECK(cudaMemset(ptr_, 0xFF, bytes_));
  }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
};

// x uploaded and quantized into the activation rows of `weight_format`.
struct DeviceActivations {
  DeviceActivations(quant::QuantFormat weight_format, const float* x, uint32_t n_in, uint32_t n_rows)
      : format(activation_format(weight_format)),
        stride(activation_layout(format, n_in).stride),
        x_dev(std::size_t{n_in} * n_rows * sizeof(float)),
        rows(stride * n_rows) {
    x_dev.upload(x, std::size_t{n_in} * n_rows * sizeof(float));
    rows.poison();
    detail::quantize_activations(format, x_dev.get<float>(), n_in, n_in, n_rows, rows.get(), nullptr);
    LAMINA_CUDA_CHECK(cudaDeviceSynchronize());
  }
  quant::QuantFormat format;
  std::size_t stride;
  DeviceBuffer x_dev;
  DeviceBuffer rows;
};

// The GGUF blocks of n_rows activation rows (stride apart on the device),
// back to back without the padding and unpacked copies.
std::vector<uint8_t> row_blocks(const DeviceBuffer& rows, quant::QuantFormat format, uint32_t n, uint32_t n_rows,
                                std::size_t stride) {
  std::vector<uint8_t> all(stride * n_rows);
  rows.download(all.data(), all.size());
  const std::size_t blocks_bytes = quant::row_bytes(format, n);
  std::vector<uint8_t> blocks(blocks_bytes * n_rows);
  for (uint32_t r = 0; r < n_rows; ++r) {
    std::memcpy(blocks.data() + r * blocks_bytes, all.data() + r * stride, blocks_bytes);
  }
  return blocks;
}

}  // namespace

std::vector<uint8_t> check_quantize_activations(quant::QuantFormat weight_format, const float* x, uint32_t n_in,
                                                uint32_t n_rows) {
  const DeviceActivations act(weight_format, x, n_in, n_rows);
  return row_blocks(act.rows, act.format, n_in, n_rows, act.stride);
}

std::vector<uint8_t> check_norm_quantize(quant::QuantFormat weight_format, const float* x, const float* w, float eps,
                                         uint32_t n, uint32_t n_rows, std::vector<float>& normed) {
  const quant::QuantFormat format = activation_format(weight_format);
  const std::size_t row_bytes = std::size_t{n} * sizeof(float);
  DeviceBuffer x_dev(row_bytes * n_rows), w_dev(row_bytes), out_dev(row_bytes * n_rows);
  x_dev.upload(x, row_bytes * n_rows);
  w_dev.upload(w, row_bytes);
  out_dev.poison();
  // Rows that are not whole blocks have no activation layout: the fused
  // kernel must decline them before touching anything.
  const uint32_t block = quant::format_traits(format).block_elems;
  if (n % block != 0) {
    if (detail::norm_rows_quantized(detail::NormKind::Rms, x_dev.get<float>(), n, nullptr, w_dev.get<float>(),
                                    nullptr, eps, n, n_rows, out_dev.get<float>(), n, format, nullptr, nullptr))
      throw CudaError("the fused norm accepted rows that are not whole blocks");
    return {};
  }
  const std::size_t stride = activation_layout(format, n).stride;
  DeviceBuffer act_dev(stride * n_rows);
  act_dev.poison();
  if (!detail::norm_rows_quantized(detail::NormKind::Rms, x_dev.get<float>(), n, nullptr, w_dev.get<float>(),
                                   nullptr, eps, n, n_rows, out_dev.get<float>(), n, format, act_dev.get(),
                                   nullptr)) {
    return {};
  }
  LAMINA_CUDA_CHECK(cudaDeviceSynchronize());
  normed.resize(std::size_t{n} * n_rows);
  out_dev.download(normed.data(), row_bytes * n_rows);
  return row_blocks(act_dev, format, n, n_rows, stride);
}

std::vector<uint8_t> check_silu_quantize(quant::QuantFormat weight_format, const float* gate, const float* up,
                                         uint32_t n, uint32_t n_rows, std::vector<float>& out) {
  const quant::QuantFormat format = activation_format(weight_format);
  const std::size_t rows_bytes = std::size_t{n} * n_rows * sizeof(float);
  DeviceBuffer gate_dev(rows_bytes), up_dev(rows_bytes), out_dev(rows_bytes);
  gate_dev.upload(gate, rows_bytes);
  up_dev.upload(up, rows_bytes);
  out_dev.poison();
  const uint32_t block = quant::format_traits(format).block_elems;
  const std::size_t stride = n % block == 0 ? activation_layout(format, n).stride : 0;
  DeviceBuffer act_dev(stride * n_rows);
  act_dev.poison();
  if (!detail::gated_activation_quantized(detail::Activation::Silu, gate_dev.get<float>(), up_dev.get<float>(), n, n,
                                          n_rows, nullptr, out_dev.get<float>(), n, format, act_dev.get(), nullptr)) {
    return {};
  }
  LAMINA_CUDA_CHECK(cudaDeviceSynchronize());
  out.resize(std::size_t{n} * n_rows);
  out_dev.download(out.data(), rows_bytes);
  return row_blocks(act_dev, format, n, n_rows, stride);
}

std::vector<float> check_matmul(quant::QuantFormat weight_format, const void* w, uint32_t n_out, uint32_t n_in,
                                const float* x, uint32_t n_rows, const float* bias, const float* residual,
                                MatmulPath path, int tile) {
  const std::size_t w_bytes = quant::row_bytes(weight_format, n_in) * n_out;
  DeviceBuffer w_dev(w_bytes + kWeightSlack);
  w_dev.upload(w, w_bytes);
  const DeviceActivations act(weight_format, x, n_in, n_rows);
  DeviceBuffer bias_dev(bias != nullptr ? n_out * sizeof(float) : 0);
  if (bias != nullptr) bias_dev.upload(bias, n_out * sizeof(float));
  const std::size_t y_bytes = std::size_t{n_out} * n_rows * sizeof(float);
  DeviceBuffer y_dev(y_bytes);
  if (residual != nullptr) {
    y_dev.upload(residual, y_bytes);  // y += W x in place: residual aliases y
  } else {
    y_dev.poison();
  }

  detail::MatmulArgs args;
  args.format = weight_format;
  args.w = w_dev.get();
  args.n_in = n_in;
  args.n_out = n_out;
  args.act = act.rows.get();
  args.n_rows = n_rows;
  args.y = y_dev.get<float>();
  args.y_stride = n_out;
  args.bias = bias != nullptr ? bias_dev.get<float>() : nullptr;
  args.residual = residual != nullptr ? y_dev.get<float>() : nullptr;
  if (path == MatmulPath::TensorCores) {
    if (!detail::matmul_mma(args, nullptr, static_cast<detail::MmaTile>(tile + 1))) return {};
  } else {
    detail::matmul(args, nullptr);
  }
  LAMINA_CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> y(std::size_t{n_out} * n_rows);
  y_dev.download(y.data(), y_bytes);
  return y;
}

std::vector<float> check_matmul_batched(quant::QuantFormat weight_format, const void* w, uint32_t n_batch,
                                        uint32_t n_out, uint32_t n_in, const float* x, uint32_t n_rows) {
  const std::size_t matrix_bytes = quant::row_bytes(weight_format, n_in) * n_out;
  DeviceBuffer w_dev(matrix_bytes * n_batch + kWeightSlack);
  w_dev.upload(w, matrix_bytes * n_batch);
  const DeviceActivations act(weight_format, x, n_in, n_rows * n_batch);  // row (t, b) at t * n_batch + b
  const std::size_t y_floats = std::size_t{n_rows} * n_batch * n_out;
  DeviceBuffer y_dev(y_floats * sizeof(float));
  y_dev.poison();
  detail::MatmulArgs args;
  args.format = weight_format;
  args.w = w_dev.get();
  args.n_in = n_in;
  args.n_out = n_out;
  args.act = act.rows.get();
  args.act_stride = act.stride * n_batch;
  args.n_rows = n_rows;
  args.y = y_dev.get<float>();
  args.y_stride = std::size_t{n_batch} * n_out;
  args.n_batch = n_batch;
  args.w_batch_bytes = matrix_bytes;
  args.act_batch_bytes = act.stride;
  args.y_batch_stride = n_out;
  detail::matmul(args, nullptr);
  LAMINA_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> y(y_floats);
  y_dev.download(y.data(), y_floats * sizeof(float));
  return y;
}

std::vector<float> check_matmul_grouped(quant::QuantFormat weight_format, const void* w, uint32_t n_out,
                                        uint32_t n_in, const float* x, const std::vector<uint32_t>& first) {
  const auto n_batch = static_cast<uint32_t>(first.size() - 1);
  const uint32_t total = first.back();
  uint32_t most = 1;
  for (uint32_t b = 0; b < n_batch; ++b) most = std::max(most, first[b + 1] - first[b]);
  const std::size_t matrix_bytes = quant::row_bytes(weight_format, n_in) * n_out;
  DeviceBuffer w_dev(matrix_bytes * n_batch + kWeightSlack);
  w_dev.upload(w, matrix_bytes * n_batch);
  DeviceBuffer first_dev(first.size() * sizeof(uint32_t));
  first_dev.upload(first.data(), first.size() * sizeof(uint32_t));
  const DeviceActivations act(weight_format, x, n_in, total);
  DeviceBuffer y_dev(std::size_t{total} * n_out * sizeof(float));
  y_dev.poison();
  detail::MatmulArgs args;
  args.format = weight_format;
  args.w = w_dev.get();
  args.n_in = n_in;
  args.n_out = n_out;
  args.act = act.rows.get();
  args.n_rows = most;
  args.y = y_dev.get<float>();
  args.y_stride = n_out;
  args.n_batch = n_batch;
  args.w_batch_bytes = matrix_bytes;
  args.batch_rows = first_dev.get<uint32_t>();
  detail::matmul(args, nullptr);
  LAMINA_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> y(std::size_t{total} * n_out);
  y_dev.download(y.data(), y.size() * sizeof(float));
  return y;
}

std::vector<std::vector<float>> check_matmul_group(const std::vector<CheckMatrix>& mats, uint32_t n_in,
                                                   const float* x, uint32_t n_rows) {
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;  // weights, biases, outputs
  std::vector<std::unique_ptr<DeviceActivations>> acts;
  std::vector<detail::MatmulArgs> args;
  std::vector<DeviceBuffer*> outputs;
  for (const CheckMatrix& m : mats) {
    const quant::QuantFormat af = activation_format(m.format);
    auto act = std::find_if(acts.begin(), acts.end(), [&](const auto& a) { return a->format == af; });
    if (act == acts.end()) {
      acts.push_back(std::make_unique<DeviceActivations>(m.format, x, n_in, n_rows));
      act = acts.end() - 1;
    }
    const std::size_t w_bytes = quant::row_bytes(m.format, n_in) * m.n_out;
    DeviceBuffer* w_dev = buffers.emplace_back(std::make_unique<DeviceBuffer>(w_bytes + kWeightSlack)).get();
    w_dev->upload(m.w, w_bytes);
    DeviceBuffer* y_dev =
        buffers.emplace_back(std::make_unique<DeviceBuffer>(std::size_t{m.n_out} * n_rows * sizeof(float))).get();
    y_dev->poison();
    outputs.push_back(y_dev);
    detail::MatmulArgs a;
    a.format = m.format;
    a.w = w_dev->get();
    a.n_in = n_in;
    a.n_out = m.n_out;
    a.act = (*act)->rows.get();
    a.n_rows = n_rows;
    a.y = y_dev->get<float>();
    a.y_stride = m.n_out;
    if (m.bias != nullptr) {
      DeviceBuffer* bias_dev = buffers.emplace_back(std::make_unique<DeviceBuffer>(m.n_out * sizeof(float))).get();
      bias_dev->upload(m.bias, m.n_out * sizeof(float));
      a.bias = bias_dev->get<float>();
    }
    args.push_back(a);
  }
  detail::matmul_group(args.data(), static_cast<int>(args.size()), nullptr);
  LAMINA_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::vector<float>> ys;
  for (std::size_t i = 0; i < mats.size(); ++i) {
    std::vector<float> y(std::size_t{mats[i].n_out} * n_rows);
    outputs[i]->download(y.data(), y.size() * sizeof(float));
    ys.push_back(std::move(y));
  }
  return ys;
}

std::vector<float> check_gather_rows(quant::QuantFormat format, const void* w, uint32_t n_rows_w, uint32_t n_cols,
                                     const std::vector<int32_t>& ids) {
  const std::size_t w_bytes = quant::row_bytes(format, n_cols) * n_rows_w;
  DeviceBuffer w_dev(w_bytes);
  w_dev.upload(w, w_bytes);
  DeviceBuffer ids_dev(ids.size() * sizeof(int32_t));
  ids_dev.upload(ids.data(), ids.size() * sizeof(int32_t));
  const std::size_t out_bytes = ids.size() * n_cols * sizeof(float);
  DeviceBuffer out_dev(out_bytes);
  out_dev.poison();
  detail::gather_rows(format, w_dev.get(), n_cols, ids_dev.get<int32_t>(), static_cast<uint32_t>(ids.size()),
                      1.0f, out_dev.get<float>(), nullptr);
  LAMINA_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> out(ids.size() * n_cols);
  out_dev.download(out.data(), out_bytes);
  return out;
}

double time_matvec_us(quant::QuantFormat weight_format, const void* w, uint32_t n_out, uint32_t n_in, int reps) {
  // Enough copies of the weights that together they overflow the L2 cache
  // twice: each launch then reads its weights from device memory.
  int device = 0;
  LAMINA_CUDA_CHECK(cudaGetDevice(&device));
  int l2_bytes = 0;
  LAMINA_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  const std::size_t w_bytes = quant::row_bytes(weight_format, n_in) * n_out;
  const std::size_t copies = std::max<std::size_t>(2, (2 * static_cast<std::size_t>(l2_bytes)) / w_bytes + 1);
  DeviceBuffer w_dev(w_bytes * copies + kWeightSlack);
  for (std::size_t c = 0; c < copies; ++c) {
    LAMINA_CUDA_CHECK(cudaMemcpy(w_dev.get<uint8_t>() + c * w_bytes, w, w_bytes, cudaMemcpyHostToDevice));
  }
  std::vector<float> x(n_in);
  for (uint32_t i = 0; i < n_in; ++i) x[i] = static_cast<float>((i * 37u) % 101u) / 50.0f - 1.0f;
  const DeviceActivations act(weight_format, x.data(), n_in, 1);
  DeviceBuffer y_dev(n_out * sizeof(float));

  detail::MatmulArgs args;
  args.format = weight_format;
  args.n_in = n_in;
  args.n_out = n_out;
  args.act = act.rows.get();
  args.n_rows = 1;
  args.y = y_dev.get<float>();
  args.y_stride = n_out;
  std::size_t next = 0;
  auto launch = [&] {
    args.w = w_dev.get<uint8_t>() + (next++ % copies) * w_bytes;
    detail::matmul(args, nullptr);
  };
  // Back-to-back launches timed in batches; the median batch gives the figure.
  constexpr int kBatch = 20;
  return detail::median_launch_us(launch, 20, kBatch, std::max(3, reps / kBatch));
}

double copy_bandwidth_gbs(std::size_t bytes, int reps) {
  DeviceBuffer src(bytes);
  DeviceBuffer dst(bytes);
  LAMINA_CUDA_CHECK(cudaMemset(src.get(), 0x5A, bytes));
  cudaEvent_t start, stop;
  LAMINA_CUDA_CHECK(cudaEventCreate(&start));
  LAMINA_CUDA_CHECK(cudaEventCreate(&stop));
  LAMINA_CUDA_CHECK(cudaMemcpy(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice));  // warm-up
  std::vector<double> gbs;
  for (int i = 0; i < reps; ++i) {
    LAMINA_CUDA_CHECK(cudaEventRecord(start, nullptr));
    LAMINA_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, nullptr));
    LAMINA_CUDA_CHECK(cudaEventRecord(stop, nullptr));
    LAMINA_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    LAMINA_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    gbs.push_back(2.0 * static_cast<double>(bytes) / (static_cast<double>(ms) * 1e6));
  }
  LAMINA_CUDA_CHECK(cudaEventDestroy(start));
  LAMINA_CUDA_CHECK(cudaEventDestroy(stop));
  std::nth_element(gbs.begin(), gbs.begin() + reps / 2, gbs.end());
  return gbs[static_cast<std::size_t>(reps / 2)];
}

}  // namespace lamina::cudaexec

#include "executor_stage.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace lamina::cudaexec::detail {
namespace {

std::string mib(std::size_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

}  // namespace

Stage::Stage(const model::ModelConfig& m, const model::ModelConfig& whole, const model::Weights& w,
             const ExecutorInputs& in, const ExecutorOptions& o, StepSizes sizes, int dev, LayerRange r,
             uint32_t n_blocks, uint32_t blocks_per_seq, const std::vector<uint32_t>& tables, ncclComm_t comm)
    : device(dev), range(r), info(device_info(dev)), tp{sizes.shard, comm, whole.n_vocab} {
  sizes.n_vocab = whole.n_vocab;
  if (info.cc_major < 8)
    throw CudaError("GPU " + info.name + " has compute capability " + std::to_string(info.cc_major) + "." +
                    std::to_string(info.cc_minor) + "; the kernels need 8.0 or newer");
  LAMINA_CUDA_CHECK(cudaSetDevice(dev));
  const AttentionShape heads = attention_heads(m);
  kv.first_layer = r.first;
  kv.n_layer = r.end - r.first;
  kv.max_blocks = blocks_per_seq;
  kv.k_dim = heads.n_head_kv * heads.head_dim_k;
  // Latent attention's values lie in its keys.
  kv.v_dim = m.latent_attention() ? 0 : heads.n_head_kv * heads.head_dim_v;
  const std::size_t block_rows = std::size_t{kv.n_layer} * model::kKvBlockPositions;
  const std::size_t kv_bytes = std::size_t{n_blocks} * block_rows * (kv.k_dim + kv.v_dim) * sizeof(__half);
  const std::size_t table_bytes = tables.size() * sizeof(uint32_t);

  // Everything is sized before anything is allocated, so a model that does
  // not fit fails with one clear message.
  const std::size_t weight_bytes = device_weight_bytes(whole, w, r, sizes.shard);
  BumpLayout measure;
  layout_step_buffers(m, in, sizes, measure);
  const std::size_t step_bytes = measure.size();
  const std::size_t need = weight_bytes + kv_bytes + table_bytes + step_bytes;
  const std::size_t reserve = 256u << 20;  // CUDA context, graphs, kernels' own needs
  if (need + reserve > info.free_bytes)
    throw CudaError("the model does not fit on GPU " + std::to_string(dev) + " (" + info.name + "): weights " +
                    (sizes.shard ? "of rank " + std::to_string(sizes.shard.rank) + " "
                     : r.first == 0 && r.end == m.n_layer ? std::string()
                                                         : "of layers " + std::to_string(r.first) + "-" +
                                                               std::to_string(r.end - 1) + " ") +
                    mib(weight_bytes) + " + KV cache " + mib(kv_bytes) + " (" + std::to_string(n_blocks) +
                    " blocks of " + std::to_string(model::kKvBlockPositions) + " positions) + workspace " +
                    mib(step_bytes) + " = " + mib(need) + ", free " + mib(info.free_bytes) +
                    "; try a smaller context" +
                    (o.devices.size() > 1 ? std::string() : " or splitting the model over several GPUs"));

  LAMINA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (cudaEvent_t* e : {&done, &taken, &staged[0], &staged[1]})
    LAMINA_CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  weights = upload_weights(whole, w, r, sizes.shard);
  kv_storage = DeviceAllocation(kv_bytes, "the KV cache");
  kv.k = static_cast<__half*>(kv_storage.get());
  kv.v = kv.k + std::size_t{n_blocks} * block_rows * kv.k_dim;
  // Attention weighs the keys past a query's position by exactly 0; the
  // values there must be finite (0 times NaN is NaN), so the cache starts zeroed.
  LAMINA_CUDA_CHECK(cudaMemset(kv_storage.get(), 0, kv_bytes));
  kv_tables = DeviceAllocation(table_bytes, "the KV block tables");
  kv.blocks = static_cast<const uint32_t*>(kv_tables.get());
  LAMINA_CUDA_CHECK(cudaMemcpy(kv_tables.get(), tables.data(), table_bytes, cudaMemcpyHostToDevice));
  step_storage = DeviceAllocation(step_bytes, "the workspace");
  BumpLayout place(step_storage.get());
  buffers = layout_step_buffers(m, in, sizes, place);

  // Both angle tables side by side: the local one (if any) after the main one.
  if (m.rope.kind != RopeKind::None) {
    std::vector<double> inv_freq = in.rope_inv_freq;
    inv_freq.insert(inv_freq.end(), in.rope_inv_freq_local.begin(), in.rope_inv_freq_local.end());
    LAMINA_CUDA_CHECK(
        cudaMemcpy(buffers.inv_freq, inv_freq.data(), inv_freq.size() * sizeof(double), cudaMemcpyHostToDevice));
  }
  if (in.gelu_f16_table)
    LAMINA_CUDA_CHECK(cudaMemcpy(buffers.gelu_table, in.gelu_f16_table, 65536 * 2, cudaMemcpyHostToDevice));
  step = std::make_unique<ForwardStep>(m, in, weights, kv, buffers, r, sizes.shard ? &tp : nullptr);
}

Stage::~Stage() {
  // The device's memory, graphs and stream are released with it current.
  (void)cudaSetDevice(device);
  for (auto& [n, exec] : graphs) (void)cudaGraphExecDestroy(exec);
  for (cudaEvent_t e : {done, taken, staged[0], staged[1]})
    if (e) (void)cudaEventDestroy(e);
  if (stream) (void)cudaStreamDestroy(stream);
}

std::vector<LayerRange> split_layers(uint32_t n_layer, const std::vector<int>& devices) {
  const std::size_t n = devices.size();
  if (n > n_layer)
    throw CudaError("cannot split " + std::to_string(n_layer) + " layers over " + std::to_string(n) + " GPUs");
  std::vector<double> free(n);
  double total = 0;
  for (std::size_t i = 0; i < n; ++i) total += free[i] = static_cast<double>(device_info(devices[i]).free_bytes);
  std::vector<LayerRange> ranges(n);
  double cumulative = 0;
  uint32_t first = 0;
  for (std::size_t i = 0; i < n; ++i) {
    cumulative += free[i];
    const auto left_after = static_cast<uint32_t>(n - 1 - i);
    uint32_t end = i + 1 == n ? n_layer : static_cast<uint32_t>(std::llround(cumulative / total * n_layer));
    end = std::clamp(end, first + 1, n_layer - left_after);
    ranges[i] = {first, end};
    first = end;
  }
  return ranges;
}

}  // namespace lamina::cudaexec::detail

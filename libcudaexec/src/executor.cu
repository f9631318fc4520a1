#include "lamina/cudaexec/executor.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <string>

#include "cuda_check.h"
#include "device_memory.h"
#include "device_weights.h"
#include "forward_step.h"
#include "latent_attention.h"
#include "ops.h"

namespace lamina::cudaexec {

using namespace detail;

namespace {

// Pinned host staging for the batch description and the results that come back.
struct HostStaging {
  int32_t* ids = nullptr;
  uint32_t* pos = nullptr;
  uint32_t* seq = nullptr;
  int32_t* out_rows = nullptr;
  int32_t* argmax = nullptr;
  AttentionTile* tiles = nullptr;
  void* block = nullptr;

  HostStaging(uint32_t rows, uint32_t logit_rows) {
    const std::size_t bytes = (3 * std::size_t{rows} + 2 * logit_rows) * 4 + rows * sizeof(AttentionTile);
    // Portable: every stage's device copies from it at pinned-memory speed.
    LAMINA_CUDA_CHECK(cudaHostAlloc(&block, bytes, cudaHostAllocPortable));
    auto* p = static_cast<uint32_t*>(block);
    ids = reinterpret_cast<int32_t*>(p);
    pos = p + rows;
    seq = p + 2 * rows;
    out_rows = reinterpret_cast<int32_t*>(p + 3 * rows);
    argmax = out_rows + logit_rows;
    tiles = reinterpret_cast<AttentionTile*>(argmax + logit_rows);
  }
  ~HostStaging() {
    if (block) (void)cudaFreeHost(block);
  }
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;
};

std::string mib(std::size_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

// One device's part of the model: a run of consecutive layers with their
// weights, KV cache and workspace (every layer on one device, or the layers
// split over several, each stage handing the residual stream to the next).
struct Stage {
  // The step keeps `m` and `in`: the executor's own copies.
  Stage(const model::ModelConfig& m, const model::Weights& w, const ExecutorInputs& in, const ExecutorOptions& o,
        const StepSizes& sizes, int device, LayerRange range, uint32_t n_blocks, uint32_t blocks_per_seq,
        const std::vector<uint32_t>& tables);
  ~Stage();
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;

  int device;
  LayerRange range;
  DeviceInfo info;
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;   // the step's residual stream is ready for the next stage
  cudaEvent_t taken = nullptr;  // the previous stage's residual stream is copied here
  cudaEvent_t staged[2] = {};   // the copies from each host staging buffer have run
  DeviceWeights weights;
  DeviceAllocation kv_storage;
  DeviceAllocation kv_tables;  // [n_seq][blocks_per_seq]
  KvView kv;
  DeviceAllocation step_storage;
  StepBuffers buffers;
  std::unique_ptr<ForwardStep> step;
  std::map<uint32_t, cudaGraphExec_t> graphs;
};

Stage::Stage(const model::ModelConfig& m, const model::Weights& w, const ExecutorInputs& in, const ExecutorOptions& o,
             const StepSizes& sizes, int dev, LayerRange r, uint32_t n_blocks, uint32_t blocks_per_seq,
             const std::vector<uint32_t>& tables)
    : device(dev), range(r), info(device_info(dev)) {
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
  const std::size_t weight_bytes = device_weight_bytes(m, w, r);
  BumpLayout measure;
  layout_step_buffers(m, in, sizes, measure);
  const std::size_t step_bytes = measure.size();
  const std::size_t need = weight_bytes + kv_bytes + table_bytes + step_bytes;
  const std::size_t reserve = 256u << 20;  // CUDA context, graphs, kernels' own needs
  if (need + reserve > info.free_bytes)
    throw CudaError("the model does not fit on GPU " + std::to_string(dev) + " (" + info.name + "): weights " +
                    (r.first == 0 && r.end == m.n_layer ? std::string()
                                                         : "of layers " + std::to_string(r.first) + "-" +
                                                               std::to_string(r.end - 1) + " ") +
                    mib(weight_bytes) + " + KV cache " + mib(kv_bytes) + " (" + std::to_string(n_blocks) +
                    " blocks of " + std::to_string(model::kKvBlockPositions) + " positions) + workspace " +
                    mib(step_bytes) + " = " + mib(need) + ", free " + mib(info.free_bytes) +
                    "; try a smaller context" +
                    (o.devices.size() > 1 ? std::string() : " or splitting the layers over several GPUs"));

  LAMINA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (cudaEvent_t* e : {&done, &taken, &staged[0], &staged[1]})
    LAMINA_CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  weights = upload_weights(m, w, r);
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
  step = std::make_unique<ForwardStep>(m, in, weights, kv, buffers, r);
}

Stage::~Stage() {
  // The device's memory, graphs and stream are released with it current.
  (void)cudaSetDevice(device);
  for (auto& [n, exec] : graphs) (void)cudaGraphExecDestroy(exec);
  for (cudaEvent_t e : {done, taken, staged[0], staged[1]})
    if (e) (void)cudaEventDestroy(e);
  if (stream) (void)cudaStreamDestroy(stream);
}

// Consecutive runs of layers, one per device, in proportion to the devices'
// free memory (each run at least one layer).
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

}  // namespace

struct Executor::Impl {
  Impl(const model::ModelConfig& config, const model::Weights& weights, const ExecutorInputs& inputs,
       const ExecutorOptions& options);

  // `output`: what the wanted rows end with.
  enum class Output { Logits, Argmax, Hidden };
  // Runs one internal step of at most max_rows rows and max_logit_rows
  // logits rows through every stage; leaves the results on the last
  // stage's device. after_layer(i) runs with the stage of layer i current.
  uint32_t run_step(std::span<const model::TokenInput> batch, Output output,
                    const std::function<void(const Stage&, int)>* after_layer = nullptr);
  // Splits `batch` into steps and calls consume(step logits rows, first output row) after each.
  template <typename Consume>
  void for_each_step(std::span<const model::TokenInput> batch, Output output, Consume&& consume);
  // Runs `batch` and copies the wanted rows (`width` values apart in
  // `rows`, on the last stage's device) of each step to out.
  void run_rows_to_host(std::span<const model::TokenInput> batch, Output output, const float* rows,
                        std::size_t width, float* out);
  // Throws ModelError naming the first token past its slot's block table.
  void check_positions(std::span<const model::TokenInput> batch) const;
  cudaGraphExec_t graph_for(Stage& stage, uint32_t n);
  Stage& last() { return *stages.back(); }

  model::ModelConfig model;
  ExecutorInputs inputs;
  ExecutorOptions options;
  model::BatchLimits limits;
  StepSizes sizes;
  AttentionShape attention_shape;
  std::vector<uint32_t> table_host;  // [n_seq][blocks_per_seq], as every stage's device holds it
  std::vector<uint32_t> table_size;  // blocks in each slot's table
  uint32_t n_blocks = 0, blocks_per_seq = 0;
  // Two, used in turn: a step is enqueued while the previous one may still
  // be copying from the other (see run_step).
  std::unique_ptr<HostStaging> staging[2];
  uint32_t next_staging = 0;
  HostStaging* current = nullptr;  // the latest step's
  std::vector<std::unique_ptr<Stage>> stages;
  bool graphs_ok = true;
};

Executor::Impl::Impl(const model::ModelConfig& m, const model::Weights& w, const ExecutorInputs& in,
                     const ExecutorOptions& o)
    : model(m), inputs(in), options(o), limits(model::batch_limits(m, w, o.n_ctx, o.n_seq)) {
  if (device_count() == 0) throw CudaError("no CUDA device is visible (the GPU path needs an NVIDIA GPU and driver)");
  if (options.devices.empty()) options.devices = {o.device};
  // A device may appear more than once (its stages then share it): how the
  // split itself is tested on one GPU.
  for (const int d : options.devices)
    if (d < 0 || d >= device_count())
      throw CudaError("GPU " + std::to_string(d) + " does not exist (" + std::to_string(device_count()) + " visible)");
  if (o.n_ctx == 0 || o.n_seq == 0 || o.max_batch == 0)
    throw CudaError("executor options: n_ctx, n_seq and max_batch must be positive");
  const bool experts = m.ffn() == model::FfnKind::MoeGatedSilu;
  if (experts && (m.n_expert > kMaxExperts || m.n_expert_used == 0 || m.n_expert_used > m.n_expert))
    throw CudaError("model: a mixture of experts needs 1 <= n_expert_used <= n_expert <= " +
                    std::to_string(kMaxExperts));
  if (m.rope.kind != RopeKind::None) {
    const uint32_t half = m.rope.n_dims / 2;
    const bool local_ok = in.rope_inv_freq_local.empty() || in.rope_inv_freq_local.size() == half;
    if (half == 0 || in.rope_inv_freq.size() != half || !local_ok)
      throw CudaError("executor inputs: rope_inv_freq (and rope_inv_freq_local, if given) need rope.n_dims / 2 = " +
                      std::to_string(half) + " angles");
  }
  for (uint32_t i = 0; i < m.n_layer; ++i) {
    if (m.layer_uses_swa_rope(i) && in.rope_inv_freq_local.empty())
      throw CudaError("executor inputs: layer " + std::to_string(i) +
                      " rotates with rope_inv_freq_local, which is empty");
  }

  sizes.max_rows = o.max_batch;
  sizes.max_logit_rows = std::min(o.max_batch, o.max_logit_rows ? o.max_logit_rows : std::max(o.n_seq, 64u));
  sizes.max_spans = attention_spans(o.n_ctx - 1);
  attention_shape = attention_heads(m);
  const bool latent = m.latent_attention();
  if (const char* why = latent ? latent_attention_unsupported(attention_shape) : attention_unsupported(attention_shape);
      *why != '\0')
    throw CudaError(std::string("the GPU attention does not support ") + why + " (head sizes " +
                    std::to_string(attention_shape.head_dim_k) + "/" + std::to_string(attention_shape.head_dim_v) +
                    ", " + std::to_string(attention_shape.n_head) + " query heads, " +
                    std::to_string(attention_shape.n_head_kv) + " KV heads)");

  blocks_per_seq = model::kv_blocks_for(o.n_ctx);
  const bool own_runs = o.kv_blocks == 0;
  n_blocks = own_runs ? blocks_per_seq * o.n_seq : o.kv_blocks;
  if (own_runs && n_blocks / o.n_seq != blocks_per_seq)
    throw CudaError("executor options: " + std::to_string(o.n_seq) + " slots of " + std::to_string(o.n_ctx) +
                    " positions need more than 2^32 KV blocks");
  // Each slot starts with its own run of blocks, or (a pool of another size)
  // with none; unused entries point at block 0 and are never read.
  table_host.assign(std::size_t{o.n_seq} * blocks_per_seq, 0);
  table_size.assign(o.n_seq, own_runs ? blocks_per_seq : 0);
  if (own_runs)
    for (std::size_t i = 0; i < table_host.size(); ++i) table_host[i] = static_cast<uint32_t>(i);

  const std::vector<LayerRange> ranges = split_layers(m.n_layer, options.devices);
  for (std::size_t i = 0; i < ranges.size(); ++i)
    stages.push_back(std::make_unique<Stage>(model, w, inputs, options, sizes, options.devices[i], ranges[i],
                                             n_blocks, blocks_per_seq, table_host));
  // Where the devices reach each other directly, the residual stream goes
  // over the link; otherwise the copies go through the host.
  for (std::size_t i = 1; i < stages.size(); ++i) {
    int can = 0;
    LAMINA_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, stages[i]->device, stages[i - 1]->device));
    if (!can) continue;
    LAMINA_CUDA_CHECK(cudaSetDevice(stages[i]->device));
    if (const cudaError_t e = cudaDeviceEnablePeerAccess(stages[i - 1]->device, 0);
        e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
      LAMINA_CUDA_CHECK(e);
    (void)cudaGetLastError();
  }
  for (auto& buffer : staging) buffer = std::make_unique<HostStaging>(sizes.max_rows, sizes.max_logit_rows);
  graphs_ok = o.use_graphs;
}

// One graph per stage and decode batch size: rows 0..n-1, all wanting
// logits, attention over every chunk of the context (empty chunks cost one
// early exit).
cudaGraphExec_t Executor::Impl::graph_for(Stage& st, uint32_t n) {
  if (auto it = st.graphs.find(n); it != st.graphs.end()) return it->second;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  LAMINA_CUDA_CHECK(cudaStreamBeginCapture(st.stream, cudaStreamCaptureModeThreadLocal));
  try {
    st.step->enqueue(n, n, plan_decode_attention(attention_shape, n, sizes.max_spans), st.stream);
  } catch (...) {
    (void)cudaStreamEndCapture(st.stream, &graph);
    if (graph) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    graphs_ok = false;
    return nullptr;
  }
  if (cudaStreamEndCapture(st.stream, &graph) != cudaSuccess ||
      cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    if (graph) (void)cudaGraphDestroy(graph);
    graphs_ok = false;  // eager from now on
    return nullptr;
  }
  (void)cudaGraphDestroy(graph);
  st.graphs.emplace(n, exec);
  return exec;
}

uint32_t Executor::Impl::run_step(std::span<const model::TokenInput> batch, Output output,
                                  const std::function<void(const Stage&, int)>* after_layer) {
  // The host does not wait for a step that yields nothing (a prompt chunk
  // without logits): the next one is enqueued at once, so split stages
  // overlap (stage 0 on a chunk while stage 1 finishes the one before). A
  // staging buffer is refilled only once every stage has copied from it.
  const uint32_t b = next_staging;
  next_staging ^= 1u;
  for (const auto& st : stages) LAMINA_CUDA_CHECK(cudaEventSynchronize(st->staged[b]));
  HostStaging& hs = *staging[b];
  current = &hs;
  const auto n = static_cast<uint32_t>(batch.size());
  uint32_t n_out = 0;
  uint32_t max_pos = 0;
  for (uint32_t i = 0; i < n; ++i) {
    hs.ids[i] = batch[i].token;
    hs.pos[i] = batch[i].pos;
    hs.seq[i] = batch[i].seq;
    max_pos = std::max(max_pos, batch[i].pos);
    if (batch[i].logits) hs.out_rows[n_out++] = static_cast<int32_t>(i);
  }
  const bool graph_shape = graphs_ok && n <= options.n_seq && n_out == n && after_layer == nullptr &&
                           output != Output::Hidden;
  AttentionPlan attention;
  if (graph_shape) {
    for (uint32_t i = 0; i < n; ++i) hs.tiles[i] = {i, 1};
    attention = plan_decode_attention(attention_shape, n, sizes.max_spans);
  } else {
    attention = plan_attention(attention_shape, hs.seq, n, max_pos, stages[0]->info.sm_count, hs.tiles);
  }
  const std::size_t rows_bytes = std::size_t{sizes.max_rows} * 4;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    Stage& st = *stages[i];
    LAMINA_CUDA_CHECK(cudaSetDevice(st.device));
    LAMINA_CUDA_CHECK(cudaMemcpyAsync(st.buffers.ids, hs.ids, 3 * rows_bytes, cudaMemcpyHostToDevice, st.stream));
    LAMINA_CUDA_CHECK(cudaMemcpyAsync(st.buffers.out_rows, hs.out_rows, n_out * 4, cudaMemcpyHostToDevice, st.stream));
    LAMINA_CUDA_CHECK(cudaMemcpyAsync(st.buffers.tiles, hs.tiles, attention.n_tiles * sizeof(AttentionTile),
                                      cudaMemcpyHostToDevice, st.stream));
    LAMINA_CUDA_CHECK(cudaEventRecord(st.staged[b], st.stream));
    if (i > 0) {
      // The residual stream of the previous stage's last layer.
      const Stage& previous = *stages[i - 1];
      LAMINA_CUDA_CHECK(cudaStreamWaitEvent(st.stream, previous.done, 0));
      LAMINA_CUDA_CHECK(cudaMemcpyPeerAsync(st.buffers.x, st.device, previous.buffers.x, previous.device,
                                            std::size_t{n} * model.n_embd * sizeof(float), st.stream));
      LAMINA_CUDA_CHECK(cudaEventRecord(st.taken, st.stream));
    }
    // This stage's residual stream is rewritten only after the next stage
    // took the previous step's.
    if (i + 1 < stages.size()) LAMINA_CUDA_CHECK(cudaStreamWaitEvent(st.stream, stages[i + 1]->taken, 0));
    cudaGraphExec_t exec = graph_shape && graphs_ok ? graph_for(st, n) : nullptr;
    if (exec) {
      LAMINA_CUDA_CHECK(cudaGraphLaunch(exec, st.stream));
    } else {
      const AttentionPlan plan = graph_shape ? plan_decode_attention(attention_shape, n, sizes.max_spans) : attention;
      const std::function<void(int)> traced = [&](int layer) { (*after_layer)(st, layer); };
      st.step->enqueue(n, n_out, plan, st.stream, after_layer ? &traced : nullptr, output == Output::Hidden);
    }
    LAMINA_CUDA_CHECK(cudaEventRecord(st.done, st.stream));
  }
  if (output == Output::Argmax && n_out > 0)
    argmax_rows(last().buffers.logits, model.n_vocab, n_out, last().buffers.argmax_parts, last().buffers.argmax,
                last().stream);
  return n_out;
}

template <typename Consume>
void Executor::Impl::for_each_step(std::span<const model::TokenInput> batch, Output output, Consume&& consume) {
  model::check_batch(batch, limits);
  check_positions(batch);
  std::size_t start = 0, out_row = 0;
  while (start < batch.size()) {
    // As many rows as fit, with at most max_logit_rows of them wanting logits.
    std::size_t end = start;
    uint32_t n_logits = 0;
    while (end < batch.size() && end - start < sizes.max_rows) {
      if (batch[end].logits) {
        if (n_logits == sizes.max_logit_rows) break;
        ++n_logits;
      }
      ++end;
    }
    const uint32_t n_out = run_step(batch.subspan(start, end - start), output);
    if (n_out > 0) consume(n_out, out_row);  // it waits for the step's results
    out_row += n_out;
    start = end;
  }
  LAMINA_CUDA_CHECK(cudaStreamSynchronize(last().stream));
}

void Executor::Impl::run_rows_to_host(std::span<const model::TokenInput> batch, Output output, const float* rows,
                                      std::size_t width, float* out) {
  const Stage& st = last();
  for_each_step(batch, output, [&](uint32_t n_out, std::size_t first) {
    if (n_out > 0)
      LAMINA_CUDA_CHECK(cudaMemcpyAsync(out + first * width, rows, n_out * width * sizeof(float),
                                        cudaMemcpyDeviceToHost, st.stream));
    LAMINA_CUDA_CHECK(cudaStreamSynchronize(st.stream));
  });
}

Executor::Executor(const model::ModelConfig& config, const model::Weights& weights, const ExecutorInputs& inputs,
                   const ExecutorOptions& options)
    : impl_(std::make_unique<Impl>(config, weights, inputs, options)) {}

Executor::~Executor() = default;

void Executor::forward(std::span<const model::TokenInput> batch, float* logits_out) {
  Impl& s = *impl_;
  s.run_rows_to_host(batch, Impl::Output::Logits, s.last().buffers.logits, s.model.n_vocab, logits_out);
}

void Executor::forward_argmax(std::span<const model::TokenInput> batch, int32_t* ids_out) {
  Impl& s = *impl_;
  Stage& last = s.last();
  s.for_each_step(batch, Impl::Output::Argmax, [&](uint32_t n_out, std::size_t first) {
    if (n_out > 0)
      LAMINA_CUDA_CHECK(cudaMemcpyAsync(s.current->argmax, last.buffers.argmax, n_out * sizeof(int32_t),
                                        cudaMemcpyDeviceToHost, last.stream));
    LAMINA_CUDA_CHECK(cudaStreamSynchronize(last.stream));
    std::copy(s.current->argmax, s.current->argmax + n_out, ids_out + first);
  });
}

void Executor::hidden_states(std::span<const model::TokenInput> batch, float* hidden_out) {
  Impl& s = *impl_;
  s.run_rows_to_host(batch, Impl::Output::Hidden, s.last().buffers.h, s.model.n_embd, hidden_out);
}

std::vector<float> Executor::trace_last_token(std::span<const model::TokenInput> batch,
                                              std::vector<float>& logits_out) {
  Impl& s = *impl_;
  if (batch.empty()) throw CudaError("trace_last_token: empty batch");
  if (batch.size() > s.sizes.max_rows) throw CudaError("trace_last_token: batch larger than max_batch");
  model::check_batch(batch, s.limits);
  s.check_positions(batch);
  std::vector<model::TokenInput> rows(batch.begin(), batch.end());
  for (auto& t : rows) t.logits = false;
  rows.back().logits = true;
  const std::size_t E = s.model.n_embd;
  const std::size_t last = rows.size() - 1;
  std::vector<float> trace((s.model.n_layer + 1) * E);
  const std::function<void(const Stage&, int)> after = [&](const Stage& st, int layer) {
    LAMINA_CUDA_CHECK(cudaMemcpyAsync(trace.data() + (layer + 1) * E, st.buffers.x + last * E, E * sizeof(float),
                                      cudaMemcpyDeviceToHost, st.stream));
  };
  s.run_step(rows, Impl::Output::Logits, &after);
  logits_out.resize(s.model.n_vocab);
  Stage& final_stage = s.last();
  LAMINA_CUDA_CHECK(cudaMemcpyAsync(logits_out.data(), final_stage.buffers.logits, logits_out.size() * sizeof(float),
                                    cudaMemcpyDeviceToHost, final_stage.stream));
  LAMINA_CUDA_CHECK(cudaStreamSynchronize(final_stage.stream));
  return trace;
}

void Executor::Impl::check_positions(std::span<const model::TokenInput> batch) const {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const model::TokenInput& t = batch[i];
    if (t.pos / model::kKvBlockPositions < table_size[t.seq]) continue;
    throw model::ModelError("token " + std::to_string(i) + " of the batch: position " + std::to_string(t.pos) +
                            " of slot " + std::to_string(t.seq) + " lies past the " +
                            std::to_string(table_size[t.seq]) + " KV blocks its table holds");
  }
}

void Executor::set_block_table(uint32_t seq, std::span<const uint32_t> blocks) {
  Impl& s = *impl_;
  if (seq >= s.options.n_seq)
    throw model::ModelError("KV cache: block table for slot " + std::to_string(seq) + " of " +
                            std::to_string(s.options.n_seq));
  if (blocks.size() > s.blocks_per_seq)
    throw model::ModelError("KV cache: " + std::to_string(blocks.size()) + " blocks for slot " + std::to_string(seq) +
                            ", more than its " + std::to_string(s.options.n_ctx) + " positions need");
  for (std::size_t i = 0; i < blocks.size(); ++i)
    if (blocks[i] >= s.n_blocks)
      throw model::ModelError("KV cache: block " + std::to_string(blocks[i]) + " (entry " + std::to_string(i) +
                              " of slot " + std::to_string(seq) + "'s table) outside the pool of " +
                              std::to_string(s.n_blocks));
  uint32_t* row = s.table_host.data() + std::size_t{seq} * s.blocks_per_seq;
  std::copy(blocks.begin(), blocks.end(), row);
  std::fill(row + blocks.size(), row + s.blocks_per_seq, 0u);
  s.table_size[seq] = static_cast<uint32_t>(blocks.size());
  // Ordered before the next step on each stage's stream; from pageable
  // memory the call returns once the row has been staged.
  for (const auto& st : s.stages) {
    LAMINA_CUDA_CHECK(cudaSetDevice(st->device));
    LAMINA_CUDA_CHECK(cudaMemcpyAsync(const_cast<uint32_t*>(st->kv.blocks) + std::size_t{seq} * s.blocks_per_seq,
                                      row, s.blocks_per_seq * sizeof(uint32_t), cudaMemcpyHostToDevice, st->stream));
  }
}

void Executor::copy_kv_block(uint32_t src, uint32_t dst, uint32_t n_pos) {
  Impl& s = *impl_;
  if (src >= s.n_blocks || dst >= s.n_blocks || n_pos > model::kKvBlockPositions)
    throw model::ModelError("KV cache: copying " + std::to_string(n_pos) + " positions from block " +
                            std::to_string(src) + " to block " + std::to_string(dst) + " of " +
                            std::to_string(s.n_blocks) + " blocks of " + std::to_string(model::kKvBlockPositions) +
                            " positions");
  if (src == dst || n_pos == 0) return;
  // Per layer, the block's first n_pos rows: one 2D copy for K and one for V.
  for (const auto& st : s.stages) {
    LAMINA_CUDA_CHECK(cudaSetDevice(st->device));
    const KvView& kv = st->kv;
    for (const auto& [base, dim] : {std::pair{kv.k, kv.k_dim}, std::pair{kv.v, kv.v_dim}}) {
      if (dim == 0) continue;
      const std::size_t pitch = std::size_t{model::kKvBlockPositions} * dim * sizeof(__half);
      LAMINA_CUDA_CHECK(cudaMemcpy2DAsync(base + kv.block_rows(dst, kv.first_layer) * dim, pitch,
                                          base + kv.block_rows(src, kv.first_layer) * dim, pitch,
                                          std::size_t{n_pos} * dim * sizeof(__half), kv.n_layer,
                                          cudaMemcpyDeviceToDevice, st->stream));
    }
  }
}

uint32_t Executor::kv_blocks() const { return impl_->n_blocks; }

std::size_t Executor::kv_block_bytes() const {
  std::size_t bytes = 0;
  for (const auto& st : impl_->stages)
    bytes += std::size_t{st->kv.n_layer} * model::kKvBlockPositions * (st->kv.k_dim + st->kv.v_dim) * sizeof(__half);
  return bytes;
}

const DeviceInfo& Executor::device() const { return impl_->stages.front()->info; }

MemoryUse Executor::memory_use() const {
  MemoryUse use;
  for (const auto& st : impl_->stages) {
    use.weights += st->weights.storage.bytes();
    use.kv_cache += st->kv_storage.bytes();
    use.workspace += st->step_storage.bytes();
  }
  return use;
}

std::vector<MemoryUse> Executor::memory_use_per_device() const {
  std::vector<MemoryUse> per;
  for (const auto& st : impl_->stages)
    per.push_back({st->weights.storage.bytes(), st->kv_storage.bytes(), st->step_storage.bytes()});
  return per;
}

std::vector<int> Executor::devices() const { return impl_->options.devices; }
uint32_t Executor::n_ctx() const { return impl_->options.n_ctx; }
uint32_t Executor::n_seq() const { return impl_->options.n_seq; }

std::size_t Executor::graphs_captured() const {
  std::size_t n = 0;
  for (const auto& st : impl_->stages) n += st->graphs.size();
  return n;
}

bool Executor::graphs_enabled() const { return impl_->graphs_ok; }

}  // namespace lamina::cudaexec

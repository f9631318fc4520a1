#include "lamina/cudaexec/executor.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <utility>
#include <string>

#include "cuda_check.h"
#include "device_memory.h"
#include "executor_stage.h"
#include "latent_attention.h"
#include "nccl_library.h"
#include "ops.h"
#include "tensor_parallel.h"

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

// The communicators of a tensor-parallel executor, one per rank (none for
// one rank), destroyed after the stages that use them.
struct Communicators {
  std::vector<ncclComm_t> comms;
  Communicators() = default;
  Communicators(const Communicators&) = delete;
  Communicators& operator=(const Communicators&) = delete;
  ~Communicators() {
    for (ncclComm_t c : comms)
      if (c) (void)nccl().comm_destroy(c);
  }
};

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
  // Enqueues stage i's part of the step (its copies from the staging buffer
  // b, the graph or the launches); `traced` as run_step's after_layer.
  void enqueue_stage(std::size_t i, uint32_t b, uint32_t n, uint32_t n_out, bool graph_shape,
                     const AttentionPlan& attention, bool hidden_only,
                     const std::function<void(const Stage&, int)>* traced);
  Stage& last() { return *stages.back(); }

  model::ModelConfig model;
  model::ModelConfig step_model;  // the model as each stage's step sees it (a rank's share under tensor parallelism)
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
  Communicators communicators;
  std::vector<std::unique_ptr<Stage>> stages;
  std::unique_ptr<RankThreads> ranks;  // tensor parallelism: one host thread per rank
  std::atomic<bool> graphs_ok = true;
};

Executor::Impl::Impl(const model::ModelConfig& m, const model::Weights& w, const ExecutorInputs& in,
                     const ExecutorOptions& o)
    : model(m), step_model(m), inputs(in), options(o), limits(model::batch_limits(m, w, o.n_ctx, o.n_seq)) {
  if (device_count() == 0) throw CudaError("no CUDA device is visible (the GPU path needs an NVIDIA GPU and driver)");
  const uint32_t tp = o.tensor_parallel;
  if (tp > 0) {
    if (o.devices.empty())
      for (uint32_t r = 0; r < tp; ++r) options.devices.push_back(static_cast<int>(r));
    if (options.devices.size() != tp)
      throw CudaError("tensor parallelism over " + std::to_string(tp) + " GPUs names " +
                      std::to_string(options.devices.size()) + " devices");
    for (std::size_t i = 0; i < options.devices.size(); ++i)
      if (std::count(options.devices.begin(), options.devices.end(), options.devices[i]) > 1)
        throw CudaError("tensor parallelism needs distinct GPUs (GPU " + std::to_string(options.devices[i]) +
                        " is named twice)");
    if (const std::string why = tensor_parallel_unsupported(m, w, tp); !why.empty())
      throw CudaError("tensor parallelism does not support " + why);
    step_model = shard_config(m, tp);
  }
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
  attention_shape = attention_heads(step_model);
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

  if (tp > 0) {
    // The communicators first: the stages size themselves by what is free after them.
    if (tp > 1) {
      communicators.comms.resize(tp);
      nccl_check(nccl().comm_init_all(communicators.comms.data(), static_cast<int>(tp), options.devices.data()),
                 "creating the communicators of the GPUs");
    }
    for (uint32_t r = 0; r < tp; ++r) {
      StepSizes shard_sizes = sizes;
      shard_sizes.shard = {r, tp};
      stages.push_back(std::make_unique<Stage>(step_model, model, w, inputs, options, shard_sizes, options.devices[r],
                                               LayerRange{0, m.n_layer}, n_blocks, blocks_per_seq, table_host,
                                               tp > 1 ? communicators.comms[r] : nullptr));
    }
    ranks = std::make_unique<RankThreads>(tp);
    if (tp > 1) {
      // NCCL connects a communicator's ranks at its first collective, which
      // allocates and so cannot happen inside a graph capture (a first step
      // that is a decode would be captured): one small all-gather here, every
      // rank at once, outside any capture.
      ranks->run([&](uint32_t r) {
        Stage& st = *stages[r];
        LAMINA_CUDA_CHECK(cudaSetDevice(st.device));
        nccl_check(nccl().all_gather(st.buffers.tp_parts, st.buffers.tp_gathered, 1, ncclFloat,
                                     communicators.comms[r], st.stream),
                   "connecting the GPUs (a first all-gather)");
        LAMINA_CUDA_CHECK(cudaStreamSynchronize(st.stream));
      });
    }
  } else {
    const std::vector<LayerRange> ranges = split_layers(m.n_layer, options.devices);
    for (std::size_t i = 0; i < ranges.size(); ++i)
      stages.push_back(std::make_unique<Stage>(model, model, w, inputs, options, sizes, options.devices[i], ranges[i],
                                               n_blocks, blocks_per_seq, table_host));
  }
  // Where the devices reach each other directly, the residual stream goes
  // over the link; otherwise the copies go through the host.
  for (std::size_t i = 1; i < stages.size() && !ranks; ++i) {
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

void Executor::Impl::enqueue_stage(std::size_t i, uint32_t b, uint32_t n, uint32_t n_out, bool graph_shape,
                                   const AttentionPlan& attention, bool hidden_only,
                                   const std::function<void(const Stage&, int)>* after_layer) {
  const HostStaging& hs = *staging[b];
  const std::size_t rows_bytes = std::size_t{sizes.max_rows} * 4;
  Stage& st = *stages[i];
  LAMINA_CUDA_CHECK(cudaSetDevice(st.device));
  LAMINA_CUDA_CHECK(cudaMemcpyAsync(st.buffers.ids, hs.ids, 3 * rows_bytes, cudaMemcpyHostToDevice, st.stream));
  LAMINA_CUDA_CHECK(cudaMemcpyAsync(st.buffers.out_rows, hs.out_rows, n_out * 4, cudaMemcpyHostToDevice, st.stream));
  LAMINA_CUDA_CHECK(cudaMemcpyAsync(st.buffers.tiles, hs.tiles, attention.n_tiles * sizeof(AttentionTile),
                                    cudaMemcpyHostToDevice, st.stream));
  LAMINA_CUDA_CHECK(cudaEventRecord(st.staged[b], st.stream));
  // Split layers: the residual stream of the previous stage's last layer,
  // and this stage's is rewritten only after the next stage took the
  // previous step's. (Tensor-parallel ranks each hold the whole stream.)
  if (i > 0 && !ranks) {
    const Stage& previous = *stages[i - 1];
    LAMINA_CUDA_CHECK(cudaStreamWaitEvent(st.stream, previous.done, 0));
    LAMINA_CUDA_CHECK(cudaMemcpyPeerAsync(st.buffers.x, st.device, previous.buffers.x, previous.device,
                                          std::size_t{n} * model.n_embd * sizeof(float), st.stream));
    LAMINA_CUDA_CHECK(cudaEventRecord(st.taken, st.stream));
  }
  if (i + 1 < stages.size() && !ranks) LAMINA_CUDA_CHECK(cudaStreamWaitEvent(st.stream, stages[i + 1]->taken, 0));
  cudaGraphExec_t exec = graph_shape && graphs_ok ? graph_for(st, n) : nullptr;
  if (exec) {
    LAMINA_CUDA_CHECK(cudaGraphLaunch(exec, st.stream));
  } else {
    const AttentionPlan plan = graph_shape ? plan_decode_attention(attention_shape, n, sizes.max_spans) : attention;
    const std::function<void(int)> traced = [&](int layer) { (*after_layer)(st, layer); };
    st.step->enqueue(n, n_out, plan, st.stream, after_layer ? &traced : nullptr, hidden_only);
  }
  LAMINA_CUDA_CHECK(cudaEventRecord(st.done, st.stream));
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
  const bool hidden_only = output == Output::Hidden;
  if (ranks) {
    // Every rank at once (their collectives meet); rank 0 traces.
    ranks->run([&](uint32_t r) {
      enqueue_stage(r, b, n, n_out, graph_shape, attention, hidden_only, r == 0 ? after_layer : nullptr);
    });
    LAMINA_CUDA_CHECK(cudaSetDevice(last().device));
  } else {
    for (std::size_t i = 0; i < stages.size(); ++i)
      enqueue_stage(i, b, n, n_out, graph_shape, attention, hidden_only, after_layer);
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
    model::throw_position_past_table(i, t, table_size[t.seq]);
  }
}

void Executor::set_block_table(uint32_t seq, std::span<const uint32_t> blocks) {
  Impl& s = *impl_;
  model::check_block_table(seq, blocks, s.options.n_seq, s.options.n_ctx, s.n_blocks);
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
  model::check_block_copy(src, dst, n_pos, s.n_blocks);
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
uint32_t Executor::tensor_parallel() const { return impl_->options.tensor_parallel; }
uint32_t Executor::n_ctx() const { return impl_->options.n_ctx; }
uint32_t Executor::n_seq() const { return impl_->options.n_seq; }

std::size_t Executor::graphs_captured() const {
  std::size_t n = 0;
  for (const auto& st : impl_->stages) n += st->graphs.size();
  return n;
}

bool Executor::graphs_enabled() const { return impl_->graphs_ok; }

}  // namespace lamina::cudaexec

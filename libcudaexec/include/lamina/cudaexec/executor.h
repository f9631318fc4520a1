// The GPU executor: a model's weights resident on one CUDA device in their
// GGUF formats, a KV cache in f16, workspace sized once, and the forward
// pass of a batch of tokens (prompt chunks and decode steps of several
// sequences) as a sequence of kernels; decode steps replay a CUDA graph.
// It reads the model as libmodel describes it (ModelConfig, Weights): the
// CPU and GPU paths share one description.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "lamina/cudaexec/device.h"
#include "lamina/cudaexec/export.h"
#include "lamina/model/config.h"
#include "lamina/model/forward.h"
#include "lamina/model/weights.h"

namespace lamina::cudaexec {

struct LAMINA_CUDAEXEC_API ExecutorOptions {
  int device = 0;
  // Two or more: the layers split over these GPUs in consecutive runs (in
  // proportion to their free memory; the first embeds, the last holds the
  // output head), the residual stream passed from one to the next; each
  // holds its layers' weights and KV cache. The same kernels in the same
  // order give the same bits as one GPU. A device named twice holds two
  // runs. Empty: `device` alone.
  std::vector<int> devices{};
  // N > 0: tensor parallelism over N distinct GPUs (`devices`, or 0..N-1
  // when empty; N = 1, 2 or 4): each holds its share of the heads, FFN
  // columns, KV cache and vocabulary, the GPUs talk through NCCL (loaded at
  // run time), and the results are bit-identical for every N (N = 1 runs
  // the same arithmetic on one GPU; it differs from 0's in the order of the
  // attention output's and down projection's sums). Dense models only.
  uint32_t tensor_parallel = 0;
  uint32_t n_ctx = 4096;      // positions per sequence
  uint32_t n_seq = 1;         // sequence slots in the KV cache
  // Blocks of model::kKvBlockPositions positions in the KV cache's pool,
  // shared by the slots through their block tables; 0: every slot its own
  // run for its whole context (model::ForwardOptions::kv_blocks).
  uint32_t kv_blocks = 0;
  uint32_t max_batch = 512;   // tokens per internal step; larger batches are split
  uint32_t max_logit_rows = 0;  // logits rows per internal step; 0: max(n_seq, 64)
  bool use_graphs = true;     // replay decode steps as CUDA graphs (eager if false or if capture fails)
};

// What the executor takes from the host besides the model: tables libmodel
// computes for its CPU path, so both paths use the same values.
struct LAMINA_CUDAEXEC_API ExecutorInputs {
  // Per rotated pair, the angle per position (rope.n_dims / 2 values), and
  // the same for the layers where ModelConfig::layer_uses_swa_rope (a second
  // base, gemma3; empty when no layer does). Unused without RoPE.
  std::vector<double> rope_inv_freq, rope_inv_freq_local;
  double rope_magnitude = 1.0;  // the factor of rope_inv_freq's cos and sin (YaRN)
  // GELU through this table of 65536 f16 results, one per f16 input (the
  // CPU path's llama.cpp-compatible numerics); null computes it exactly
  // (ForwardOptions::exact_activations).
  const uint16_t* gelu_f16_table = nullptr;
};

// Where the device memory went, in bytes.
struct LAMINA_CUDAEXEC_API MemoryUse {
  std::size_t weights = 0;
  std::size_t kv_cache = 0;
  std::size_t workspace = 0;
};

class LAMINA_CUDAEXEC_API Executor {
 public:
  // Uploads the weights and allocates everything; `weights` need not outlive
  // the constructor, `config` and `inputs` are copied. Throws CudaError when
  // there is no such device, a tensor format has no kernel, or the model,
  // cache and workspace do not fit in the device's free memory (naming the
  // sizes).
  Executor(const model::ModelConfig& config, const model::Weights& weights, const ExecutorInputs& inputs,
           const ExecutorOptions& options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs `batch` (a sequence's tokens in position order) and copies the
  // logits of the entries with `logits` set to `logits_out`, in batch order,
  // [n_wanted x n_vocab]. A sequence's logits never depend on what else is in
  // the batch. A token outside the model's or the cache's bounds throws
  // ModelError (model::check_batch, the CPU path's check).
  void forward(std::span<const model::TokenInput> batch, float* logits_out);

  // Like forward, but returns only the argmax (lowest index among equal
  // maxima) of each wanted row: one id per row crosses the bus.
  void forward_argmax(std::span<const model::TokenInput> batch, int32_t* ids_out);

  // Like forward, but copies the hidden state after the final norm of each
  // wanted row ([n_wanted x n_embd]); the output head is not run.
  void hidden_states(std::span<const model::TokenInput> batch, float* hidden_out);

  // The KV cache's block tables, as model::Forward::set_block_table and
  // copy_kv_block describe them (ModelError for a slot, block or size out of
  // range); they take effect from the next batch on.
  void set_block_table(uint32_t seq, std::span<const uint32_t> blocks);
  void copy_kv_block(uint32_t src, uint32_t dst, uint32_t n_pos);
  uint32_t kv_blocks() const;
  std::size_t kv_block_bytes() const;

  // The hidden state (residual stream) after the embedding and after every
  // layer for the last token of `batch`, [(n_layer + 1) x n_embd], then the
  // logits of that token: for comparing against another implementation
  // layer by layer. Runs eagerly; writes the KV cache like forward.
  std::vector<float> trace_last_token(std::span<const model::TokenInput> batch, std::vector<float>& logits_out);

  // The first device's.
  const DeviceInfo& device() const;
  // The devices in layer order (one for an executor on one GPU), or in rank order.
  std::vector<int> devices() const;
  uint32_t tensor_parallel() const;  // ExecutorOptions::tensor_parallel
  MemoryUse memory_use() const;  // all devices together
  std::vector<MemoryUse> memory_use_per_device() const;
  uint32_t n_ctx() const;
  uint32_t n_seq() const;
  // CUDA graphs captured so far (one per decode batch shape).
  std::size_t graphs_captured() const;
  bool graphs_enabled() const;

 private:
  struct LAMINA_CUDAEXEC_LOCAL Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lamina::cudaexec

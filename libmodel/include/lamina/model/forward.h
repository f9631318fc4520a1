// The forward pass: a batch of tokens (of one or several sequences) through
// every layer, with the KV cache, producing logits where asked. Forward is
// the interface the generation loop drives; CpuForward runs it on the CPU
// (libquant kernels), the GPU implementation lives in gpu_forward.h.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lamina/model/kv_cache.h"
#include "lamina/model/model.h"
#include "lamina/model/export.h"

namespace lamina::quant {
class ThreadPool;
}

namespace lamina::model {

struct LAMINA_MODEL_API ForwardOptions {
  uint32_t n_ctx = 0;        // positions per sequence; 0: the model's training context (capped at 4096)
  uint32_t n_seq = 1;        // sequence slots in the KV cache
  uint32_t max_batch = 512;  // tokens per internal step; larger batches are split
  KvType kv_type = KvType::F16;  // half the memory of F32, as llama.cpp defaults
  // Blocks of kKvBlockPositions positions in the KV cache's pool, which the
  // slots share through their block tables (set_block_table); 0: enough for
  // every slot's whole context, each slot starting with its own run.
  uint32_t kv_blocks = 0;
  int n_threads = 0;         // 0: all hardware threads
  // Exact numerics: quantized weights meet f32 activations and GELU is
  // computed exactly. The default follows llama.cpp's CPU backend instead
  // (activations quantized to Q8 for quantized weights, GELU through an f16
  // table), which is much faster and reproduces its logits closely.
  bool exact_activations = false;
  // Rearranges, once at load, the weight matrices whose format has a packed
  // layout (lamina/quant/packed.h) that this CPU's kernels run faster, and
  // releases the file's pages of those matrices, so resident memory grows
  // only by the few % some packed layouts add.
  bool pack_weights = true;
  // With pack_weights: the formats that have kernels on the file's layout
  // with the packed layouts' arithmetic (Q4_K, Q5_K) are packed by a thread
  // of their own instead of at load, and swapped in
  // between steps; until then they run on the file's layout. The outputs
  // are the same bits either way, whenever the swaps happen. The other
  // packed formats are packed at load.
  bool pack_in_background = true;
};

struct LAMINA_MODEL_API TokenInput {
  int32_t token = 0;
  uint32_t pos = 0;   // position within its sequence
  uint32_t seq = 0;   // KV cache slot
  bool logits = false;
};

// What every forward pass (CPU and GPU) resolves and checks the same way.
// ForwardOptions::n_ctx resolved: `requested`, or for 0 the model's training
// context capped at 4096 (4096 when the model does not say).
LAMINA_MODEL_API uint32_t context_size(const ModelConfig& config, uint32_t requested);

struct LAMINA_MODEL_API BatchLimits {
  uint32_t n_vocab = 0;
  uint32_t n_ctx = 0;
  uint32_t n_seq = 0;
  uint32_t n_learned_positions = std::numeric_limits<uint32_t>::max();  // a learned position table's rows
};

// The limits of a forward pass of `config` and `weights` with a cache of
// n_ctx positions for n_seq sequences.
LAMINA_MODEL_API BatchLimits batch_limits(const ModelConfig& config, const Weights& weights, uint32_t n_ctx,
                                          uint32_t n_seq);

// Throws ModelError naming the first token of `batch` outside the limits:
// an id outside the vocabulary, a position past the context or the learned
// positions, a sequence without a KV cache slot.
LAMINA_MODEL_API void check_batch(std::span<const TokenInput> batch, const BatchLimits& limits);

class LAMINA_MODEL_API Forward {
 public:
  virtual ~Forward() = default;

  // Runs `batch` (tokens of a sequence must come in position order, and a
  // position's earlier positions must already be in the cache or earlier in
  // the batch). Returns the logits of the entries with `logits` set, in batch
  // order, [n_wanted x n_vocab]; valid until the next call.
  // A sequence's logits never depend on what else is in the batch.
  virtual std::span<const float> decode(std::span<const TokenInput> batch) = 0;

  // The greedy choice (argmax, lowest id on ties) for each entry with
  // `logits` set, in batch order. A GPU implementation returns only the ids.
  virtual std::vector<int32_t> decode_greedy(std::span<const TokenInput> batch);

  // The residual stream of the last token of `batch` after the embedding and
  // after each layer, [(n_layer + 1) x n_embd], and that token's logits: for
  // comparing implementations layer by layer. Writes the KV cache like decode.
  virtual std::vector<float> trace_last_token(std::span<const TokenInput> batch, std::vector<float>& logits) = 0;

  virtual const ModelConfig& config() const = 0;
  virtual uint32_t n_ctx() const = 0;
  virtual uint32_t n_seq() const = 0;
  virtual std::size_t kv_cache_bytes() const = 0;
  // Where it runs, for reports: "CPU (AVX3_DL)", "CUDA (NVIDIA H200)".
  virtual std::string backend_name() const = 0;
  // Device memory in use, for reports (empty on the CPU).
  virtual std::string device_memory_report() const { return {}; }

  // The KV cache is a pool of kv_blocks() blocks of kKvBlockPositions
  // positions (lamina/model/kv_cache.h). Slot `seq` reads and writes its
  // positions [i * kKvBlockPositions, (i + 1) * kKvBlockPositions) in
  // blocks[i] from the next batch on; a position past its table is refused
  // (ModelError). Slots may share blocks whose positions they only read, so
  // a prompt prefix computed once serves every sequence that starts with it.
  virtual uint32_t kv_blocks() const = 0;
  virtual void set_block_table(uint32_t seq, std::span<const uint32_t> blocks) = 0;
  // Positions [0, n_pos) of every layer of block `src` into block `dst` (a
  // shared block's prefix, for a sequence that goes on differently).
  virtual void copy_kv_block(uint32_t src, uint32_t dst, uint32_t n_pos) = 0;
  // Bytes of one block (all layers, K and V).
  virtual std::size_t kv_block_bytes() const = 0;

  // Runs `batch` like decode() but returns, for the entries with `logits`
  // set, the hidden state after the final norm instead of logits
  // ([n_wanted x n_embd], valid until the next call); the output head is
  // not computed. For embeddings. Throws ModelError where not implemented.
  virtual std::span<const float> hidden_states(std::span<const TokenInput> batch);
};

class LAMINA_MODEL_API CpuForward final : public Forward {
 public:
  CpuForward(const Model& model, const ForwardOptions& options);
  ~CpuForward() override;
  CpuForward(const CpuForward&) = delete;
  CpuForward& operator=(const CpuForward&) = delete;

  std::span<const float> decode(std::span<const TokenInput> batch) override;
  std::vector<float> trace_last_token(std::span<const TokenInput> batch, std::vector<float>& logits) override;

  const ModelConfig& config() const override;
  uint32_t n_ctx() const override;
  uint32_t n_seq() const override;
  int n_threads() const;
  // Waits for the background packing (ForwardOptions::pack_in_background)
  // to finish and swaps every copy in: steady-state timings (lamina-bench)
  // start after it. Outputs are the same bits before and after.
  void finish_background_packing();
  std::size_t kv_cache_bytes() const override;
  std::string backend_name() const override;
  uint32_t kv_blocks() const override;
  void set_block_table(uint32_t seq, std::span<const uint32_t> blocks) override;
  void copy_kv_block(uint32_t src, uint32_t dst, uint32_t n_pos) override;
  std::size_t kv_block_bytes() const override;
  std::span<const float> hidden_states(std::span<const TokenInput> batch) override;

 private:
  struct LAMINA_MODEL_LOCAL State;
  std::unique_ptr<State> state_;
};

}  // namespace lamina::model

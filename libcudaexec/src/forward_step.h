// One forward step of a batch on the device: the launch sequence of every
// layer, reading the batch (ids, positions, slots) from device memory so the
// same launches serve any position (and can be captured as a CUDA graph).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>

#include "attention.h"
#include "device_memory.h"
#include "device_weights.h"
#include "matmul.h"
#include "lamina/cudaexec/executor.h"
#include "lamina/model/config.h"
#include "ops.h"
#include "tensor_parallel.h"

namespace lamina::cudaexec::detail {

// A product of w (its format, weights and shape; the activations, rows and
// output are the caller's).
inline MatmulArgs weight_product(const DeviceMatrix& w) {
  MatmulArgs a;
  a.format = w.format;
  a.w = w.data;
  a.n_in = w.n_in;
  a.n_out = w.n_out;
  return a;
}

// Device buffers of one step, sized once for (max rows, max logits rows).
struct StepBuffers {
  int32_t* ids = nullptr;       // [rows] token ids
  uint32_t* pos = nullptr;      // [rows]
  uint32_t* seq = nullptr;      // [rows]
  int32_t* out_rows = nullptr;  // [logit rows] batch rows that want logits
  AttentionTile* tiles = nullptr;  // [rows] the attention's query tiles
  int32_t* argmax = nullptr;    // [logit rows]
  float *x = nullptr, *h = nullptr, *qkv = nullptr, *attn_out = nullptr, *proj = nullptr;
  float *gate = nullptr, *up = nullptr, *logits = nullptr, *attention = nullptr;
  // Tensor parallelism: this rank's slices of a row-parallel product
  // [slices_per_rank][rows][n_embd], every rank's [kTensorSlices][rows][n_embd];
  // this rank's logits [logit rows][its vocabulary share] and every rank's
  // ([ranks][logit rows][share]), before `logits` puts them side by side.
  // Without it logits_local is logits and the rest is null.
  float *tp_parts = nullptr, *tp_gathered = nullptr, *logits_local = nullptr, *logits_gathered = nullptr;
  void* act[2] = {nullptr, nullptr};  // quantized activations, two formats at once
  double* inv_freq = nullptr;
  double2* rope = nullptr;                   // [rows][rope_dims / 2] this step's rotations
  double2* rope_local = nullptr;             // the same for layer_uses_swa_rope layers (null: none)
  ArgmaxCandidate* argmax_parts = nullptr;  // [logit rows][kArgmaxParts]
  uint16_t* gelu_table = nullptr;
  // Mixtures of experts: router logits; the (token, expert) pairs grouped by
  // expert (each expert's first pair, and per pair its token, output slot and
  // weight); the experts' inputs, gate and up values and outputs, per pair.
  float *moe_logits = nullptr, *moe_in = nullptr, *moe_gate = nullptr, *moe_up = nullptr, *moe_down = nullptr;
  float *moe_out = nullptr, *moe_weights = nullptr;
  uint32_t* moe_first = nullptr;
  int32_t *moe_rows = nullptr, *moe_slots = nullptr;
  int32_t* moe_chosen = nullptr;     // [rows][n_expert_used] each token's experts, by rank
  float* moe_chosen_w = nullptr;     // their weights
  // Latent attention: wq_a / wkv_a outputs, the normed q_a, per (row, head)
  // the query's nope part and then the head's output.
  float *mla_a = nullptr, *mla_q_a = nullptr, *mla_heads = nullptr;
};


struct StepSizes {
  uint32_t max_rows = 0;
  uint32_t max_logit_rows = 0;
  uint32_t max_spans = 0;  // attention spans covering n_ctx
  TensorShard shard;       // with tensor parallelism: the rank's (the model passed is its shard_config)
  uint32_t n_vocab = 0;    // with tensor parallelism: the whole vocabulary's
};

// The attention's heads: the model's own; for latent attention (absorbed,
// latent_attention.h) one KV head whose key row is [k_pe; c] (kv_lora +
// rope values) and whose values are c (kv_lora).
AttentionShape attention_heads(const model::ModelConfig& model);

// Lays out the buffers in `layout` (pass a null-based layout to measure).
StepBuffers layout_step_buffers(const model::ModelConfig& model, const ExecutorInputs& inputs, const StepSizes& sizes,
                                BumpLayout& layout);

class ForwardStep {
 public:
  // Runs the layers of `range` (weights holds them): from the token ids when
  // the range starts at layer 0, else from the residual stream already in
  // buffers.x; to the logits when it ends at the last layer, else leaving
  // the residual stream in buffers.x. With `tp`, `model` is the rank's
  // shard_config, weights its shard, and the step talks to the other ranks.
  ForwardStep(const model::ModelConfig& model, const ExecutorInputs& inputs, const DeviceWeights& weights,
              const KvView& kv, const StepBuffers& buffers, LayerRange range, const TensorParallelComm* tp = nullptr);

  // Enqueues the step for n rows (ids/pos/seq/out_rows/tiles already on the
  // device), n_logit_rows of them wanting logits. after_layer(i) runs on the
  // host after enqueuing layer i (-1: the embedding), for tracing.
  // `attention` says how attention is launched (its tiles on the device).
  // With `hidden_only`, the wanted rows end after the final norm (in
  // buffers.h, n_embd apart) and the output head is not run: embeddings.
  void enqueue(uint32_t n, uint32_t n_logit_rows, const AttentionPlan& attention, cudaStream_t stream,
               const std::function<void(int)>* after_layer = nullptr, bool hidden_only = false);

 private:
  // y = W x (+ bias) (+ residual), x quantized once per format and source.
  void linear(const DeviceMatrix& w, const float* x, uint32_t n, float* y, std::size_t y_stride, const float* bias,
              const float* residual, cudaStream_t stream);
  // h = norm(x rows) for n rows (x row rows[r] when rows is given), in the
  // same launch quantized for `next`, the matrix that reads h first.
  void norm_input(const DeviceMatrix& next, const float* w, const float* b, const int32_t* rows, uint32_t n,
                  cudaStream_t stream);
  // out = act(gate) (* up) for n rows of the FFN width, in the same launch
  // quantized for `next`, the only matrix that reads out (where that launch
  // applies, only the quantized rows are kept).
  void activate(Activation kind, const DeviceMatrix& next, const float* gate, const float* up, std::size_t in_stride,
                float* out, uint32_t n, cudaStream_t stream);
  // out = residual + bias + W x for a row-parallel W, this rank's slices of
  // x's row [n x slices_per_rank * W.n_in] (tensor_parallel.h): the slices'
  // partial products gathered from every rank and added in slice order.
  void row_parallel(const DeviceMatrix& w, const float* x, uint32_t n, const float* bias, const float* residual,
                    float* out, cudaStream_t stream);
  // y = W x (+ bias) (+ residual) for the attention output and the down
  // projection: row_parallel under tensor parallelism, else linear.
  void output_product(const DeviceMatrix& w, const float* x, uint32_t n, float* y, const float* bias,
                      const float* residual, cudaStream_t stream);
  // The output head on n rows of buffers.h into buffers.logits (every rank's
  // share of the vocabulary gathered under tensor parallelism).
  void output_head(uint32_t n, cudaStream_t stream);
  // x's rows quantized for w (x: rows of w.n_in values), through the slots.
  const void* quantized_input(const DeviceMatrix& w, const float* x, uint32_t n_rows, cudaStream_t stream);
  // Per head h < n_head, rows [first_row, first_row + n_out) of w's head h
  // (head_rows rows apart) times the activations act + h * act_head_bytes
  // (rows act_stride apart) into y + h * y_head (rows y_stride apart): one launch.
  void per_head_product(const DeviceMatrix& w, uint32_t first_row, uint32_t n_out, uint32_t head_rows,
                        const void* act, std::size_t act_stride, std::size_t act_head_bytes, uint32_t n, float* y,
                        std::size_t y_stride, std::size_t y_head, cudaStream_t stream);
  // Multi-head latent attention, absorbed (latent_attention.h), from the
  // normed input: returns the heads' outputs [n][n_head * value_dim].
  const float* latent_attention_block(uint32_t layer, uint32_t n, uint32_t n_spans, const double2* rope,
                                      cudaStream_t stream);
  void attention_block(uint32_t layer, uint32_t n, const AttentionPlan& launch, cudaStream_t stream);
  void ffn_block(uint32_t layer, uint32_t n, cudaStream_t stream);
  // The routed FFN of a mixture of experts (and its shared experts) into
  // b_.proj, wholly on the device (graphs capture it like any step).
  void moe_ffn(uint32_t layer, uint32_t n, cudaStream_t stream);

  const model::ModelConfig& m_;
  const ExecutorInputs& in_;
  AttentionShape heads_;  // attention_heads(m_)
  const DeviceWeights& w_;
  KvView kv_;
  LayerRange range_;
  StepBuffers b_;
  const TensorParallelComm* tp_;
  // Which (source, format) each activation slot holds; reset when the source changes.
  struct ActSlot {
    const float* src = nullptr;
    quant::QuantFormat format = quant::QuantFormat::F32;
  } slots_[2];
  uint32_t next_slot_ = 0;
  void forget_activations() { slots_[0] = slots_[1] = ActSlot{}; }
};

}  // namespace lamina::cudaexec::detail

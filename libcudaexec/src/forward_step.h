// One forward step of a batch on the device: the launch sequence of every
// layer, reading the batch (ids, positions, slots) from device memory so the
// same launches serve any position (and can be captured as a CUDA graph).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "attention.h"
#include "device_memory.h"
#include "device_weights.h"
#include "lamina/cudaexec/executor.h"
#include "lamina/model/config.h"
#include "ops.h"

namespace lamina::cudaexec::detail {

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
  void* act[2] = {nullptr, nullptr};  // quantized activations, two formats at once
  double* inv_freq = nullptr;
  double2* rope = nullptr;                   // [rows][rope_dims / 2] this step's rotations
  double2* rope_local = nullptr;             // the same for layer_uses_swa_rope layers (null: none)
  ArgmaxCandidate* argmax_parts = nullptr;  // [logit rows][kArgmaxParts]
  uint16_t* gelu_table = nullptr;
  // Mixtures of experts: router logits, the rows routed to each expert, their
  // output slots and weights, and the experts' inputs and outputs.
  float *moe_logits = nullptr, *moe_in = nullptr, *moe_down = nullptr, *moe_out = nullptr, *moe_weights = nullptr;
  int32_t *moe_rows = nullptr, *moe_slots = nullptr;
  int32_t* moe_chosen = nullptr;     // [rows][n_expert_used] each token's experts, by rank
  float* moe_chosen_w = nullptr;     // their weights
  // Latent attention: wq_a / wkv_a outputs, the normed latent (or q_a), the expanded nope keys.
  float *mla_a = nullptr, *mla_latent = nullptr, *mla_knope = nullptr;
};

// Experts a mixture may have on the GPU (the routing groups rows per expert
// in a fixed-size table).
inline constexpr uint32_t kMaxExperts = 256;

struct StepSizes {
  uint32_t max_rows = 0;
  uint32_t max_logit_rows = 0;
  uint32_t max_spans = 0;  // attention spans covering n_ctx
};

// The attention heads as the GPU caches them. Latent attention (deepseek2)
// runs expanded: each head's key [rotated k_pe; K_b c] and value V_b c are
// computed from the shared latent c and cached per head, so there are n_head
// KV heads of nope + rope (the rotated dims first) and value dims; otherwise
// the model's own heads.
AttentionShape attention_heads(const model::ModelConfig& model);

// Lays out the buffers in `layout` (pass a null-based layout to measure).
StepBuffers layout_step_buffers(const model::ModelConfig& model, const ExecutorInputs& inputs, const StepSizes& sizes,
                                BumpLayout& layout);

class ForwardStep {
 public:
  ForwardStep(const model::ModelConfig& model, const ExecutorInputs& inputs, const DeviceWeights& weights,
              const KvView& kv, const StepBuffers& buffers);

  // Enqueues the step for n rows (ids/pos/seq/out_rows/tiles already on the
  // device), n_logit_rows of them wanting logits. after_layer(i) runs on the
  // host after enqueuing layer i (-1: the embedding), for tracing.
  // `attention` says how attention is launched (its tiles on the device).
  void enqueue(uint32_t n, uint32_t n_logit_rows, const AttentionPlan& attention, cudaStream_t stream,
               const std::function<void(int)>* after_layer = nullptr);

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
  // Latent attention's Q, K and V (rows of stride F) from the normed input.
  void latent_qkv(const DeviceLayer& l, uint32_t n, float* q, float* k, float* v, std::size_t F, cudaStream_t stream);
  void attention_block(uint32_t layer, uint32_t n, const AttentionPlan& launch, cudaStream_t stream);
  void ffn_block(uint32_t layer, uint32_t n, cudaStream_t stream);
  // The routed FFN of a mixture of experts (and its shared experts) into
  // b_.proj. The rows are grouped per expert on the host, so this step
  // cannot be captured as a graph.
  void moe_ffn(uint32_t layer, uint32_t n, cudaStream_t stream);

  const model::ModelConfig& m_;
  const ExecutorInputs& in_;
  AttentionShape heads_;  // attention_heads(m_)
  const DeviceWeights& w_;
  KvView kv_;
  StepBuffers b_;
  // Which (source, format) each activation slot holds; reset when the source changes.
  struct ActSlot {
    const float* src = nullptr;
    quant::QuantFormat format = quant::QuantFormat::F32;
  } slots_[2];
  uint32_t next_slot_ = 0;
  // Host copies for the grouping, sized once.
  std::vector<float> host_weights_;
  std::vector<int32_t> host_rows_, host_slots_, host_chosen_;
  std::vector<float> host_chosen_w_;
  void forget_activations() { slots_[0] = slots_[1] = ActSlot{}; }
};

}  // namespace lamina::cudaexec::detail

// The model's tensors resident on the device, reachable by index (no string
// lookups per token), uploaded once in their GGUF formats.
#pragma once

#include <cstddef>
#include <vector>

#include "device_memory.h"
#include "lamina/model/config.h"
#include "lamina/model/weights.h"
#include "tensor_parallel.h"

namespace lamina::cudaexec::detail {

struct DeviceMatrix {
  quant::QuantFormat format = quant::QuantFormat::F32;
  const void* data = nullptr;
  uint32_t n_in = 0, n_out = 0;
  uint32_t n_expert = 1;
  explicit operator bool() const { return data != nullptr; }
  // Matrix e of an expert tensor.
  DeviceMatrix expert(uint32_t e) const;
};

struct DeviceLayer {
  const float *attn_norm = nullptr, *attn_norm_bias = nullptr;
  DeviceMatrix wq, wk, wv, wqkv;
  const float *bq = nullptr, *bk = nullptr, *bv = nullptr, *bqkv = nullptr;
  const float *q_norm = nullptr, *k_norm = nullptr;
  const float* attn_sinks = nullptr;
  DeviceMatrix wo;
  const float* bo = nullptr;
  const float* post_attn_norm = nullptr;
  const float *ffn_norm = nullptr, *ffn_norm_bias = nullptr;
  DeviceMatrix w_gate, w_up, w_down;
  const float *b_up = nullptr, *b_down = nullptr;
  const float* post_ffn_norm = nullptr;
  DeviceMatrix router, gate_exps, up_exps, down_exps;
  const float *router_bias = nullptr, *gate_exps_bias = nullptr, *up_exps_bias = nullptr, *down_exps_bias = nullptr;
  const float* expert_selection_bias = nullptr;
  DeviceMatrix gate_shexp, up_shexp, down_shexp;
  // Latent attention: wq holds each head's rotated rows first; wk_b and wv_b
  // are the stacks of per-head matrices [nope -> kv_lora] and [kv_lora -> value].
  DeviceMatrix wq_a, wkv_a, wk_b, wv_b;
  const float *q_a_norm = nullptr, *kv_a_norm = nullptr;
};

struct DeviceWeights {
  DeviceMatrix token_embd, position_embd, output;
  const float *output_norm = nullptr, *output_norm_bias = nullptr;
  std::vector<DeviceLayer> layers;
  DeviceAllocation storage;
};

// The layers [first, end) of a model on one device, with the embedding
// when first is 0 and the output head when end is the last layer's end.
struct LayerRange {
  uint32_t first = 0, end = 0;
  bool embeds() const { return first == 0; }
  bool heads(const model::ModelConfig& c) const { return end == c.n_layer; }
};

// Bytes the range's tensors take on the device (with alignment).
std::size_t device_weight_bytes(const model::ModelConfig& config, const model::Weights& weights, LayerRange range,
                                TensorShard shard = {});

// Uploads the range's tensors (the other layers stay empty); with a shard,
// only that rank's part (tensor_parallel.h): its rows of the column-parallel
// matrices, its slices of the row-parallel ones as a stack of
// slices_per_rank() matrices [n_out x n_in / kTensorSlices] (DeviceMatrix
// n_out counts all their rows), its rows of the output head; the rest
// whole. `config` is the whole model's. Throws CudaError when a matrix
// format has no GPU kernel or the device is out of memory.
DeviceWeights upload_weights(const model::ModelConfig& config, const model::Weights& weights, LayerRange range,
                             TensorShard shard = {});

}  // namespace lamina::cudaexec::detail

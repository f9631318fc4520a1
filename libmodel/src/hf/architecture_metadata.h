// config.json -> the architecture's GGUF metadata, as llama.cpp's
// convert_hf_to_gguf.py writes it for the model classes lamina runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hf/hf_config.h"
#include "hf/metadata_builder.h"

namespace lamina::model::hf {

// The converter classes lamina maps; each names the GGUF architecture it writes.
enum class Family { Llama, Qwen2, Qwen3, Phi3, Gpt2, Gemma2, Gemma3, Deepseek2, GptOss };

struct HfArchitecture {
  Family family = Family::Llama;
  std::string hf_class;   // config.json "architectures"[0], e.g. "MistralForCausalLM"
  std::string gguf_name;  // general.architecture
  uint32_t n_layer = 0;
  uint32_t n_embd = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim = 0;
  uint32_t n_vocab = 0;  // config.json vocab_size
  bool tied_embeddings = false;
  uint32_t n_expert = 0;  // Mixtral, gpt-oss: experts per layer (num_local_experts); 0 for a dense FFN
  // DeepSeek V2/V3: the latent attention's widths (kv_b_proj is split by them)
  // and the leading dense layers.
  uint32_t kv_lora_rank = 0, nope_dim = 0, value_dim = 0, n_dense_lead = 0;
  // DeepSeek V3's multi-token-prediction layers after the last one
  // (num_nextn_predict_layers): not part of the model, skipped as llama.cpp's converter does.
  uint32_t n_extra_layers = 0;
  // Llama 3.1 RoPE scaling: the factor each rotated pair's frequency is
  // divided by (rope_freqs.weight); empty when the model has none.
  std::vector<float> rope_freqs;
};

// Identifies the model class and reads the shape; throws ModelError naming
// config.json and the key for anything lamina cannot run exactly.
HfArchitecture read_architecture(const HfConfig& config);

// Adds general.architecture and the <arch>.* keys.
void add_architecture_metadata(const HfConfig& config, const HfArchitecture& arch, MetadataBuilder& out);

}  // namespace lamina::model::hf

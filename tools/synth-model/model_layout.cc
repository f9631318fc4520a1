#include "model_layout.h"

namespace lamina::synth {
namespace {

// Weights and biases N(0, 0.02), as models are initialised before training;
// norm gains around 1.
constexpr float kWeightStd = 0.02f;
constexpr float kNormStd = 0.02f;

// llama-quantize's quantization_version of the block layouts.
constexpr uint32_t kQuantizationVersion = 2;

void add(std::vector<SynthTensor>& out, std::string name, std::vector<uint64_t> shape) {
  const bool norm = name.ends_with("_norm.weight");
  out.push_back({std::move(name), std::move(shape), norm ? 1.0f : 0.0f,
                 norm ? kNormStd : kWeightStd});
}

}  // namespace

// deepseek2's attention tensors (llama.cpp's split attn_k_b / attn_v_b layout).
void add_latent_attention(std::vector<SynthTensor>& t, const ModelPreset& p, const std::string& blk) {
  const LatentShape& m = *p.mla;
  const uint64_t embd = p.n_embd, heads = p.n_head, q_width = heads * (m.nope_dim + m.rope_dim);
  if (m.q_lora_rank > 0) {
    add(t, blk + "attn_q_a.weight", {embd, m.q_lora_rank});
    add(t, blk + "attn_q_a_norm.weight", {m.q_lora_rank});
    add(t, blk + "attn_q_b.weight", {m.q_lora_rank, q_width});
  } else {
    add(t, blk + "attn_q.weight", {embd, q_width});
  }
  add(t, blk + "attn_kv_a_mqa.weight", {embd, uint64_t{m.kv_lora_rank} + m.rope_dim});
  add(t, blk + "attn_kv_a_norm.weight", {m.kv_lora_rank});
  add(t, blk + "attn_k_b.weight", {m.nope_dim, m.kv_lora_rank, heads});
  add(t, blk + "attn_v_b.weight", {m.kv_lora_rank, m.value_dim, heads});
  add(t, blk + "attn_output.weight", {heads * m.value_dim, embd});
}

std::vector<SynthTensor> model_tensors(const ModelPreset& p) {
  const uint64_t embd = p.n_embd;
  const uint64_t q_width = uint64_t{p.n_head} * p.head_dim();
  const uint64_t kv_width = uint64_t{p.n_head_kv} * p.head_dim();
  std::vector<SynthTensor> t;
  add(t, "token_embd.weight", {embd, p.n_vocab});
  add(t, "output_norm.weight", {embd});
  if (!p.tied_embeddings) add(t, "output.weight", {embd, p.n_vocab});
  for (uint32_t i = 0; i < p.n_layer; ++i) {
    const std::string blk = "blk." + std::to_string(i) + ".";
    add(t, blk + "attn_norm.weight", {embd});
    if (p.mla) {
      add_latent_attention(t, p, blk);
      add(t, blk + "ffn_norm.weight", {embd});
      if (i < p.mla->n_dense_lead) {
        add(t, blk + "ffn_gate.weight", {embd, p.mla->n_ff_dense});
        add(t, blk + "ffn_up.weight", {embd, p.mla->n_ff_dense});
        add(t, blk + "ffn_down.weight", {uint64_t{p.mla->n_ff_dense}, embd});
        continue;
      }
      const uint64_t shared = uint64_t{p.n_ff} * p.mla->n_expert_shared;
      add(t, blk + "ffn_gate_inp.weight", {embd, p.n_expert});
      add(t, blk + "ffn_gate_exps.weight", {embd, p.n_ff, p.n_expert});
      add(t, blk + "ffn_up_exps.weight", {embd, p.n_ff, p.n_expert});
      add(t, blk + "ffn_down_exps.weight", {uint64_t{p.n_ff}, embd, p.n_expert});
      add(t, blk + "ffn_gate_shexp.weight", {embd, shared});
      add(t, blk + "ffn_up_shexp.weight", {embd, shared});
      add(t, blk + "ffn_down_shexp.weight", {shared, embd});
      continue;
    }
    add(t, blk + "attn_q.weight", {embd, q_width});
    add(t, blk + "attn_k.weight", {embd, kv_width});
    add(t, blk + "attn_v.weight", {embd, kv_width});
    if (p.qkv_bias) {
      add(t, blk + "attn_q.bias", {q_width});
      add(t, blk + "attn_k.bias", {kv_width});
      add(t, blk + "attn_v.bias", {kv_width});
    }
    if (p.gemma3()) {
      add(t, blk + "attn_q_norm.weight", {p.head_dim()});
      add(t, blk + "attn_k_norm.weight", {p.head_dim()});
    }
    add(t, blk + "attn_output.weight", {q_width, embd});
    if (p.gpt_oss()) {
      add(t, blk + "attn_output.bias", {embd});
      add(t, blk + "attn_sinks.weight", {p.n_head});
    }
    // gpt-oss names its pre-FFN norm post_attention_norm.
    if (p.gemma3() || p.gpt_oss()) add(t, blk + "post_attention_norm.weight", {embd});
    if (!p.gpt_oss()) add(t, blk + "ffn_norm.weight", {embd});
    if (p.n_expert > 0) {
      add(t, blk + "ffn_gate_inp.weight", {embd, p.n_expert});
      add(t, blk + "ffn_gate_exps.weight", {embd, p.n_ff, p.n_expert});
      add(t, blk + "ffn_up_exps.weight", {embd, p.n_ff, p.n_expert});
      add(t, blk + "ffn_down_exps.weight", {uint64_t{p.n_ff}, embd, p.n_expert});
      if (p.gpt_oss()) {
        add(t, blk + "ffn_gate_inp.bias", {p.n_expert});
        add(t, blk + "ffn_gate_exps.bias", {p.n_ff, p.n_expert});
        add(t, blk + "ffn_up_exps.bias", {p.n_ff, p.n_expert});
        add(t, blk + "ffn_down_exps.bias", {embd, p.n_expert});
      }
    } else {
      add(t, blk + "ffn_gate.weight", {embd, p.n_ff});
      add(t, blk + "ffn_up.weight", {embd, p.n_ff});
      add(t, blk + "ffn_down.weight", {uint64_t{p.n_ff}, embd});
    }
    if (p.gemma3()) add(t, blk + "post_ffw_norm.weight", {embd});
  }
  return t;
}

void add_model_metadata(const ModelPreset& p, const BpeVocab& vocab,
                        quantize::FileType file_type, uint64_t seed, gguf::GgufWriter& w) {
  using gguf::Value;
  const std::string arch(p.arch);
  w.set("general.architecture", Value::string(arch));
  w.set("general.name", Value::string("lamina-synthetic-" + std::string(p.name)));
  w.set("general.description",
        Value::string("RANDOM weights (seed " + std::to_string(seed) +
                      ") in the shapes of " + std::string(p.name) +
                      ", written by lamina-synth-model; not a trained model"));
  w.set("general.file_type", Value::u32(static_cast<uint32_t>(file_type)));
  w.set("general.quantization_version", Value::u32(kQuantizationVersion));

  const std::string k = arch + ".";
  w.set(k + "context_length", Value::u32(p.n_ctx));
  w.set(k + "embedding_length", Value::u32(p.n_embd));
  w.set(k + "block_count", Value::u32(p.n_layer));
  w.set(k + "feed_forward_length", Value::u32(p.n_ff));
  w.set(k + "attention.head_count", Value::u32(p.n_head));
  w.set(k + "attention.head_count_kv", Value::u32(p.n_head_kv));
  w.set(k + "attention.layer_norm_rms_epsilon", Value::f32(p.rms_eps));
  w.set(k + "rope.dimension_count", Value::u32(p.head_dim()));
  w.set(k + "rope.freq_base", Value::f32(p.rope_theta));
  w.set(k + "vocab_size", Value::u32(p.n_vocab));
  if (p.n_expert > 0) {
    w.set(k + "expert_count", Value::u32(p.n_expert));
    w.set(k + "expert_used_count", Value::u32(p.n_expert_used));
  }
  if (p.gpt_oss()) {
    w.set(k + "expert_feed_forward_length", Value::u32(p.n_ff));
    w.set(k + "attention.key_length", Value::u32(p.head_dim()));
    w.set(k + "attention.value_length", Value::u32(p.head_dim()));
    w.set(k + "attention.sliding_window", Value::u32(p.sliding_window));
    // YaRN x32 over gpt-oss's original 4096 positions.
    w.set(k + "rope.scaling.type", Value::string("yarn"));
    w.set(k + "rope.scaling.factor", Value::f32(32.0f));
    w.set(k + "rope.scaling.original_context_length", Value::u32(4096));
  }
  if (p.mla) {
    const LatentShape& m = *p.mla;
    // One latent "KV head" of kv_lora + rope values; the per-head widths as *_mla.
    const std::pair<const char*, uint32_t> counts[] = {
        {"feed_forward_length", m.n_ff_dense},
        {"expert_feed_forward_length", p.n_ff},
        {"expert_shared_count", m.n_expert_shared},
        {"leading_dense_block_count", m.n_dense_lead},
        {"attention.q_lora_rank", m.q_lora_rank},
        {"attention.kv_lora_rank", m.kv_lora_rank},
        {"attention.key_length", m.kv_lora_rank + m.rope_dim},
        {"attention.value_length", m.kv_lora_rank},
        {"attention.key_length_mla", m.nope_dim + m.rope_dim},
        {"attention.value_length_mla", m.value_dim},
        {"rope.dimension_count", m.rope_dim},
    };
    for (const auto& [key, value] : counts) w.set(k + key, Value::u32(value));
    w.set(k + "expert_weights_scale", Value::f32(m.expert_weights_scale));
    w.set(k + "rope.scaling.type", Value::string("yarn"));
    w.set(k + "rope.scaling.factor", Value::f32(m.yarn_factor));
    w.set(k + "rope.scaling.original_context_length", Value::u32(m.yarn_orig_ctx));
    w.set(k + "rope.scaling.yarn_log_multiplier", Value::f32(m.yarn_log_multiplier));
  }
  if (p.gemma3()) {
    w.set(k + "attention.key_length", Value::u32(p.head_dim()));
    w.set(k + "attention.value_length", Value::u32(p.head_dim()));
    w.set(k + "attention.sliding_window", Value::u32(p.sliding_window));
    w.set(k + "attention.sliding_window_pattern", Value::u32(p.sliding_window_pattern));
    w.set(k + "rope.freq_base_swa", Value::f32(p.rope_theta_swa));
  }

  const TokenizerStyle& style = *p.tokenizer;
  w.set("tokenizer.ggml.model", Value::string("gpt2"));
  w.set("tokenizer.ggml.pre", Value::string(std::string(style.pre)));
  w.set("tokenizer.ggml.tokens", Value::string_array(vocab.tokens));
  w.set("tokenizer.ggml.token_type", Value::i32_array(vocab.token_types));
  w.set("tokenizer.ggml.merges", Value::string_array(vocab.merges));
  w.set("tokenizer.ggml.bos_token_id", Value::u32(static_cast<uint32_t>(vocab.bos)));
  w.set("tokenizer.ggml.eos_token_id", Value::u32(static_cast<uint32_t>(vocab.eos)));
  if (vocab.padding >= 0)
    w.set("tokenizer.ggml.padding_token_id", Value::u32(static_cast<uint32_t>(vocab.padding)));
  w.set("tokenizer.ggml.add_bos_token", Value::boolean(style.add_bos));
  w.set("tokenizer.chat_template", Value::string(std::string(style.chat_template)));
}

}  // namespace lamina::synth

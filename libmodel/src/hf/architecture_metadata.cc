// Which keys each converter class writes follows convert_hf_to_gguf.py
// (TextModel.set_gguf_parameters and the LlamaModel, Qwen2Model, Qwen3Model,
// Phi3MiniModel, GPT2Model, Gemma2Model and Gemma3Model overrides; Mixtral goes through
// LlamaModel, which also writes the expert counts). Where the converter
// would write a value that does not describe the checkpoint, lamina writes
// the true one and says so here:
//  - GPT-2: feed_forward_length is n_inner when set (the converter always
//    writes 4 * n_embd) and context_length falls back to n_positions;
//  - Llama 3.1 RoPE: original_max_position_embeddings is read from the RoPE
//    settings first (transformers 5 keeps it there; the converter looks only
//    at the top level and would assume 8192);
//  - Mistral's sliding window is written as llama.attention.sliding_window,
//    and Gemma 2's query_pre_attn_scalar, when it differs from head_dim, as
//    gemma2.attention.scale: llama.cpp has no place for either.
#include "hf/architecture_metadata.h"

#include <cmath>
#include <numbers>

#include "lamina/model/config.h"

namespace lamina::model::hf {
namespace {

using gguf::Value;

struct ClassInfo {
  std::string_view hf_class;
  Family family;
  std::string_view gguf_name;
};

constexpr ClassInfo kClasses[] = {
    {"LlamaForCausalLM", Family::Llama, "llama"},   {"MistralForCausalLM", Family::Llama, "llama"},
    {"Qwen2ForCausalLM", Family::Qwen2, "qwen2"},   {"Qwen3ForCausalLM", Family::Qwen3, "qwen3"},
    {"Phi3ForCausalLM", Family::Phi3, "phi3"},      {"GPT2LMHeadModel", Family::Gpt2, "gpt2"},
    {"Gemma2ForCausalLM", Family::Gemma2, "gemma2"}, {"Gemma3ForCausalLM", Family::Gemma3, "gemma3"},
    {"MixtralForCausalLM", Family::Llama, "llama"}, {"GptOssForCausalLM", Family::GptOss, "gpt-oss"},
    {"DeepseekV2ForCausalLM", Family::Deepseek2, "deepseek2"}, {"DeepseekV3ForCausalLM", Family::Deepseek2, "deepseek2"},
};

std::string supported_classes() {
  std::string s;
  for (const auto& c : kClasses) s += (s.empty() ? "" : ", ") + std::string(c.hf_class);
  return s;
}

const ClassInfo& identify(const HfConfig& config) {
  const Json* list = config.find("architectures");
  if (!list || !list->is_array() || list->empty() || !(*list)[0].is_string())
    config.fail("architectures", "must list the model class (e.g. \"LlamaForCausalLM\")");
  const std::string name = (*list)[0].get<std::string>();
  for (const auto& c : kClasses) {
    if (c.hf_class == name) return c;
  }
  throw ModelError(config.file_name() + ": model class '" + name + "' is not supported (supported: " +
                   supported_classes() + ")");
}

// Gemma 3's period of local and global layers: sliding_window_pattern, else
// from layer_types (the first global layer), else transformers' default 6.
uint32_t gemma3_window_period(const HfConfig& config) {
  if (auto p = config.u32("sliding_window_pattern")) {
    if (*p == 0) config.fail("sliding_window_pattern", "must be positive");
    return *p;
  }
  if (const Json* types = config.find("layer_types"); types && types->is_array()) {
    for (std::size_t i = 0; i < types->size(); ++i) {
      if ((*types)[i] == "full_attention") return static_cast<uint32_t>(i + 1);
    }
  }
  return 6;
}

// layer_types, where given, must follow the period lamina runs: layer i is
// local iff i % period < period - 1.
void check_layer_types(const HfConfig& config, uint32_t period) {
  const Json* types = config.find("layer_types");
  if (!types) return;
  if (!types->is_array()) config.fail("layer_types", "is not a list");
  for (std::size_t i = 0; i < types->size(); ++i) {
    const std::string want = i % period < period - 1 ? "sliding_attention" : "full_attention";
    if ((*types)[i] != want)
      config.fail("layer_types", "layer " + std::to_string(i) + " is not '" + want +
                                     "' (lamina runs one global layer in every " + std::to_string(period) + ")");
  }
}

void require_value(const HfConfig& config, std::string_view key, std::string_view expected,
                   std::string_view fallback) {
  const std::string value = config.string(key).value_or(std::string(fallback));
  if (value != expected)
    config.fail(key, "is '" + value + "'; this model class runs only with '" + std::string(expected) + "'");
}

// DeepSeek V2/V3: what llama.cpp's deepseek2 graph (and lamina's) computes.
void check_deepseek(const HfConfig& config) {
  require_value(config, "hidden_act", "silu", "silu");
  if (config.u32("moe_layer_freq").value_or(1) != 1)
    config.fail("moe_layer_freq", "is not 1; every layer after the leading dense ones must have experts");
  // Group-limited routing restricts the choice to the best groups first.
  const uint32_t groups = config.u32("n_group").value_or(1);
  if (groups > 1 && config.u32("topk_group").value_or(groups) < groups)
    config.fail("topk_group", "is below n_group; group-limited expert routing is not supported");
  const std::string scoring = config.string("scoring_func").value_or("softmax");
  if (scoring != "softmax" && scoring != "sigmoid")
    config.fail("scoring_func", "is '" + scoring + "' (softmax or sigmoid)");
  const HfConfig& rope = config.rope();
  const std::string rope_type = rope.string("rope_type").value_or("default");
  if (rope_type != "default" && rope_type != "yarn")
    config.fail("rope_scaling", "type '" + rope_type + "' is not supported for DeepSeek (default, yarn)");
  // llama.cpp cancels YaRN's magnitude on the rotated dims, which transformers
  // does only when both mscales agree.
  if (rope_type == "yarn" && rope.number("mscale").value_or(1.0) != rope.number("mscale_all_dim").value_or(1.0))
    config.fail("rope_scaling", "mscale and mscale_all_dim differ; lamina runs YaRN with them equal");
}

// Rejects the settings under which the mapped architecture would compute
// something else than transformers.
void check_supported(const HfConfig& config, Family family) {
  switch (family) {
    case Family::Llama:
    case Family::Qwen2:
    case Family::Qwen3:
    case Family::Phi3:
      require_value(config, "hidden_act", "silu", "silu");
      if (config.boolean("mlp_bias").value_or(false)) config.fail("mlp_bias", "is true; MLP biases are not supported");
      if (config.boolean("use_sliding_window").value_or(false))
        config.fail("use_sliding_window", "is true; this model class runs without a sliding window only");
      break;
    case Family::Deepseek2:
      check_deepseek(config);
      return;
    case Family::Gpt2:
      require_value(config, "activation_function", "gelu_new", "gelu_new");
      if (config.boolean("scale_attn_by_inverse_layer_idx").value_or(false))
        config.fail("scale_attn_by_inverse_layer_idx", "is true; not supported");
      if (!config.boolean("scale_attn_weights").value_or(true))
        config.fail("scale_attn_weights", "is false; not supported");
      break;
    case Family::Gemma2:
    case Family::Gemma3: {
      const std::string act = config.string("hidden_activation").value_or(config.string("hidden_act").value_or(""));
      if (act != "gelu_pytorch_tanh")
        config.fail("hidden_activation", "is '" + act + "'; Gemma runs only with 'gelu_pytorch_tanh'");
      // Gemma 2 alternates local and global layers; Gemma 3 has one global
      // layer in every sliding_window_pattern.
      check_layer_types(config, family == Family::Gemma2 ? 2 : gemma3_window_period(config));
      if (const Json* rope = config.find("rope_parameters"); rope && rope->contains("sliding_attention"))
        config.fail("rope_parameters",
                    "is given per layer type; lamina reads rope_theta, rope_local_base_freq and rope_scaling");
      break;
    }
    case Family::GptOss:
      // Sliding-window layers alternate with global ones, the first local;
      // the experts' clamp is the model's constant.
      check_layer_types(config, 2);
      if (config.number("swiglu_limit").value_or(7.0) != 7.0)
        config.fail("swiglu_limit", "is not 7; lamina's gpt-oss experts clamp at 7");
      break;
  }
  const std::string rope_type = config.rope().string("rope_type").value_or("default");
  if (rope_type == "yarn" && family != Family::GptOss && family != Family::Deepseek2)
    config.fail("rope_parameters", "rope_type yarn is only read for gpt-oss and DeepSeek models");
  if (rope_type != "default" && rope_type != "linear" && rope_type != "llama3" && rope_type != "yarn")
    config.fail("rope_parameters", "rope_type '" + rope_type + "' is not supported (default, linear, llama3, yarn)");
  if (rope_type == "llama3" && family != Family::Llama)
    config.fail("rope_parameters", "rope_type llama3 is only read for Llama models");
  const double partial = config.rope().number("partial_rotary_factor").value_or(1.0);
  if (partial != 1.0 && family != Family::Phi3)
    config.fail("partial_rotary_factor", "is not 1; partial rotary embeddings are only read for Phi-3");
}

// Llama 3.1: the divisor of each rotated pair's frequency, as the converter
// computes it (in float32, like its torch code).
std::vector<float> llama3_rope_factors(const HfConfig& rope, uint32_t head_dim) {
  const float base = static_cast<float>(rope.number("rope_theta").value_or(10000.0));
  const float factor = static_cast<float>(rope.number("factor").value_or(8.0));
  const float low = static_cast<float>(rope.number("low_freq_factor").value_or(1.0));
  const float high = static_cast<float>(rope.number("high_freq_factor").value_or(4.0));
  const float old_ctx = static_cast<float>(rope.number("original_max_position_embeddings").value_or(8192.0));
  const float low_wavelen = old_ctx / low;
  const float high_wavelen = old_ctx / high;
  std::vector<float> out;
  for (uint32_t i = 0; i < head_dim; i += 2) {
    const float freq = 1.0f / std::pow(base, static_cast<float>(i) / static_cast<float>(head_dim));
    const float wavelen = 2.0f * std::numbers::pi_v<float> / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(factor);
    } else {
      const float smooth = (old_ctx / wavelen - low) / (high - low);
      out.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return out;
}

void set_u32(MetadataBuilder& out, const std::string& key, std::optional<uint32_t> v) {
  if (v) out.set(key, Value::u32(*v));
}
void set_f32(MetadataBuilder& out, const std::string& key, std::optional<double> v) {
  if (v) out.set(key, Value::f32(static_cast<float>(*v)));
}

// TextModel.set_gguf_parameters: the keys every class that does not override it writes.
void add_text_model_keys(const HfConfig& c, const HfArchitecture& a, MetadataBuilder& out) {
  const std::string p = a.gguf_name + ".";
  out.set(p + "block_count", Value::u32(a.n_layer));
  set_u32(out, p + "context_length",
          c.first_u32({"max_position_embeddings", "n_ctx", "n_positions", "max_length", "max_sequence_length",
                       "model_max_length"}));
  set_u32(out, p + "embedding_length", c.first_u32({"hidden_size", "n_embd", "dim"}));
  set_u32(out, p + "feed_forward_length", c.first_u32({"intermediate_size", "n_inner", "hidden_dim"}));
  set_u32(out, p + "attention.head_count", c.first_u32({"num_attention_heads", "n_head", "n_heads"}));
  set_u32(out, p + "attention.head_count_kv", c.first_u32({"num_key_value_heads", "n_kv_heads"}));
  const HfConfig& rope = c.rope();
  if (rope.string("rope_type").value_or("") == "linear" && rope.has("factor")) {
    out.set(p + "rope.scaling.type", Value::string("linear"));
    set_f32(out, p + "rope.scaling.factor", rope.number("factor"));
  }
  set_f32(out, p + "rope.freq_base", rope.number("rope_theta"));
  set_f32(out, p + "attention.layer_norm_rms_epsilon", c.first_number({"rms_norm_eps", "norm_eps"}));
  set_f32(out, p + "attention.layer_norm_epsilon",
          c.first_number({"layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"}));
  if (c.has("head_dim")) {
    set_u32(out, p + "attention.key_length", c.u32("head_dim"));
    set_u32(out, p + "attention.value_length", c.u32("head_dim"));
  }
}

void add_llama_keys(const HfConfig& c, const HfArchitecture& a, MetadataBuilder& out) {
  add_text_model_keys(c, a, out);
  out.set("llama.vocab_size", Value::u32(a.n_vocab));
  out.set("llama.rope.dimension_count", Value::u32(a.head_dim));
  if (auto window = c.u32("sliding_window"); window && *window > 0)
    out.set("llama.attention.sliding_window", Value::u32(*window));
  if (a.n_expert > 0) {
    out.set("llama.expert_count", Value::u32(a.n_expert));
    out.set("llama.expert_used_count", Value::u32(c.required_u32({"num_experts_per_tok"})));
  }
}

// GptOssModel: the text-model keys, the experts, the window and YaRN (the
// converter writes no beta keys; transformers' defaults 32 and 1 are
// llama.cpp's, and lamina writes them only where the checkpoint differs).
void add_gpt_oss_keys(const HfConfig& c, const HfArchitecture& a, MetadataBuilder& out) {
  add_text_model_keys(c, a, out);
  const std::string p = "gpt-oss.";
  out.set(p + "expert_count", Value::u32(a.n_expert));
  out.set(p + "expert_used_count", Value::u32(c.required_u32({"num_experts_per_tok"})));
  out.set(p + "expert_feed_forward_length", Value::u32(c.required_u32({"intermediate_size"})));
  set_u32(out, p + "attention.sliding_window", c.u32("sliding_window"));
  const HfConfig& rope = c.rope();
  if (rope.string("rope_type").value_or("") == "yarn") {
    out.set(p + "rope.scaling.type", Value::string("yarn"));
    set_f32(out, p + "rope.scaling.factor", rope.number("factor"));
    set_u32(out, p + "rope.scaling.original_context_length", rope.u32("original_max_position_embeddings"));
    if (rope.number("beta_fast").value_or(32.0) != 32.0) set_f32(out, p + "rope.scaling.yarn_beta_fast", rope.number("beta_fast"));
    if (rope.number("beta_slow").value_or(1.0) != 1.0) set_f32(out, p + "rope.scaling.yarn_beta_slow", rope.number("beta_slow"));
  }
}

void add_phi3_keys(const HfConfig& c, const HfArchitecture& a, MetadataBuilder& out) {
  const double partial = c.rope().number("partial_rotary_factor").value_or(1.0);
  out.set("phi3.context_length", Value::u32(c.required_u32({"n_positions", "max_position_embeddings"})));
  set_u32(out, "phi3.rope.scaling.original_context_length", c.rope().u32("original_max_position_embeddings"));
  out.set("phi3.embedding_length", Value::u32(a.n_embd));
  out.set("phi3.feed_forward_length", Value::u32(c.required_u32({"intermediate_size"})));
  out.set("phi3.block_count", Value::u32(a.n_layer));
  out.set("phi3.attention.head_count", Value::u32(a.n_head));
  out.set("phi3.attention.head_count_kv", Value::u32(a.n_head_kv));
  set_f32(out, "phi3.attention.layer_norm_rms_epsilon", c.number("rms_norm_eps"));
  out.set("phi3.rope.dimension_count",
          Value::u32(static_cast<uint32_t>(partial * a.n_embd) / a.n_head));
  set_f32(out, "phi3.rope.freq_base", c.rope().number("rope_theta"));
  out.set("phi3.attention.sliding_window", Value::u32(c.u32("sliding_window").value_or(0)));
}

void add_gpt2_keys(const HfConfig& c, const HfArchitecture& a, MetadataBuilder& out) {
  out.set("gpt2.block_count", Value::u32(a.n_layer));
  out.set("gpt2.context_length", Value::u32(c.required_u32({"n_ctx", "n_positions"})));
  out.set("gpt2.embedding_length", Value::u32(a.n_embd));
  out.set("gpt2.feed_forward_length", Value::u32(c.u32("n_inner").value_or(4 * a.n_embd)));
  out.set("gpt2.attention.head_count", Value::u32(a.n_head));
  set_f32(out, "gpt2.attention.layer_norm_epsilon", c.number("layer_norm_epsilon"));
}

// Gemma 2 and 3 (Gemma3Model writes the RoPE scaling of the global layers,
// the local layers' base and, where the checkpoint's period is not llama.cpp's
// default of 6, sliding_window_pattern, which the converter leaves out).
void add_gemma_keys(const HfConfig& c, const HfArchitecture& a, MetadataBuilder& out) {
  const std::string p = a.gguf_name + ".";
  out.set(p + "context_length", Value::u32(c.required_u32({"max_position_embeddings"})));
  out.set(p + "embedding_length", Value::u32(a.n_embd));
  out.set(p + "block_count", Value::u32(a.n_layer));
  out.set(p + "feed_forward_length", Value::u32(c.required_u32({"intermediate_size"})));
  out.set(p + "attention.head_count", Value::u32(a.n_head));
  out.set(p + "attention.head_count_kv", Value::u32(a.n_head_kv));
  set_f32(out, p + "attention.layer_norm_rms_epsilon", c.number("rms_norm_eps"));
  out.set(p + "attention.key_length", Value::u32(a.head_dim));
  out.set(p + "attention.value_length", Value::u32(a.head_dim));
  set_f32(out, p + "attn_logit_softcapping", c.number("attn_logit_softcapping"));
  set_f32(out, p + "final_logit_softcapping", c.number("final_logit_softcapping"));
  set_u32(out, p + "attention.sliding_window", c.u32("sliding_window"));
  set_f32(out, p + "rope.freq_base", c.rope().number("rope_theta"));
  const uint32_t scalar = c.u32("query_pre_attn_scalar").value_or(a.head_dim);
  if (scalar != a.head_dim)
    out.set(p + "attention.scale", Value::f32(1.0f / std::sqrt(static_cast<float>(scalar))));
  if (a.family != Family::Gemma3) return;
  set_f32(out, p + "rope.freq_base_swa", c.number("rope_local_base_freq"));
  out.set(p + "attention.sliding_window_pattern", Value::u32(gemma3_window_period(c)));
  const HfConfig& rope = c.rope();
  if (rope.string("rope_type").value_or("") == "linear" && rope.has("factor")) {
    out.set(p + "rope.scaling.type", Value::string("linear"));
    set_f32(out, p + "rope.scaling.factor", rope.number("factor"));
  }
}

// DeepseekV2Model.set_gguf_parameters: one latent "KV head" of
// kv_lora_rank + rope width, the per-head widths as *_mla, the experts and
// the router as the config states them.
void add_deepseek_keys(const HfConfig& c, const HfArchitecture& a, MetadataBuilder& out) {
  add_text_model_keys(c, a, out);
  const uint32_t rope_dim = c.required_u32({"qk_rope_head_dim"});
  out.set("deepseek2.vocab_size", Value::u32(a.n_vocab));
  out.set("deepseek2.attention.head_count_kv", Value::u32(1));
  out.set("deepseek2.leading_dense_block_count", Value::u32(a.n_dense_lead));
  out.set("deepseek2.attention.q_lora_rank", Value::u32(c.u32("q_lora_rank").value_or(0)));
  out.set("deepseek2.attention.kv_lora_rank", Value::u32(a.kv_lora_rank));
  out.set("deepseek2.attention.key_length", Value::u32(a.kv_lora_rank + rope_dim));
  out.set("deepseek2.attention.value_length", Value::u32(a.kv_lora_rank));
  out.set("deepseek2.attention.key_length_mla", Value::u32(a.nope_dim + rope_dim));
  out.set("deepseek2.attention.value_length_mla", Value::u32(a.value_dim));
  out.set("deepseek2.rope.dimension_count", Value::u32(rope_dim));
  out.set("deepseek2.expert_feed_forward_length", Value::u32(c.required_u32({"moe_intermediate_size"})));
  out.set("deepseek2.expert_count", Value::u32(a.n_expert));
  out.set("deepseek2.expert_used_count", Value::u32(c.required_u32({"num_experts_per_tok"})));
  out.set("deepseek2.expert_shared_count", Value::u32(c.u32("n_shared_experts").value_or(0)));
  set_f32(out, "deepseek2.expert_weights_scale", c.number("routed_scaling_factor").value_or(1.0));
  out.set("deepseek2.expert_weights_norm", Value::boolean(c.boolean("norm_topk_prob").value_or(false)));
  const bool sigmoid = c.string("scoring_func").value_or("softmax") == "sigmoid";
  out.set("deepseek2.expert_gating_func", Value::u32(sigmoid ? 2 : 1));
  const HfConfig& rope = c.rope();
  if (rope.string("rope_type").value_or("") == "yarn") {
    out.set("deepseek2.rope.scaling.type", Value::string("yarn"));
    set_f32(out, "deepseek2.rope.scaling.factor", rope.number("factor"));
    set_u32(out, "deepseek2.rope.scaling.original_context_length", rope.u32("original_max_position_embeddings"));
    out.set("deepseek2.rope.scaling.yarn_log_multiplier",
            Value::f32(static_cast<float>(0.1 * rope.number("mscale_all_dim").value_or(0.0))));
  }
}

}  // namespace

HfArchitecture read_architecture(const HfConfig& config) {
  const ClassInfo& info = identify(config);
  check_supported(config, info.family);
  HfArchitecture a;
  a.family = info.family;
  a.hf_class = std::string(info.hf_class);
  a.gguf_name = std::string(info.gguf_name);
  a.n_layer = config.required_u32({"num_hidden_layers", "n_layer", "n_layers", "num_layers"});
  a.n_embd = config.required_u32({"hidden_size", "n_embd", "dim"});
  a.n_head = config.required_u32({"num_attention_heads", "n_head", "n_heads"});
  a.n_head_kv = config.first_u32({"num_key_value_heads", "n_kv_heads"}).value_or(a.n_head);
  a.n_vocab = config.required_u32({"vocab_size"});
  if (a.n_layer == 0 || a.n_embd == 0 || a.n_head == 0 || a.n_head_kv == 0 || a.n_vocab == 0)
    throw ModelError(config.file_name() + ": layer, width, head and vocabulary counts must be positive");
  if (a.n_head % a.n_head_kv != 0)
    config.fail("num_key_value_heads", "does not divide num_attention_heads");
  a.head_dim = config.u32("head_dim").value_or(a.n_embd / a.n_head);
  if (a.head_dim == 0 || a.head_dim % 2 != 0) config.fail("head_dim", "must be positive and even");
  a.tied_embeddings = config.boolean("tie_word_embeddings").value_or(
      a.family == Family::Gemma2 || a.family == Family::Gemma3 || a.family == Family::Gpt2);
  a.n_expert = config.u32("num_local_experts").value_or(0);
  if (a.n_expert > 0 && a.family != Family::Llama && a.family != Family::GptOss)
    config.fail("num_local_experts", "is set; experts are only read for Mixtral and gpt-oss models");
  if (a.family == Family::GptOss && a.n_expert == 0) config.fail("num_local_experts", "must be positive for gpt-oss");
  if (a.family == Family::Deepseek2) {
    a.n_expert = config.required_u32({"n_routed_experts"});
    a.kv_lora_rank = config.required_u32({"kv_lora_rank"});
    a.nope_dim = config.required_u32({"qk_nope_head_dim"});
    a.value_dim = config.required_u32({"v_head_dim"});
    a.n_dense_lead = config.u32("first_k_dense_replace").value_or(0);
    a.n_extra_layers = config.u32("num_nextn_predict_layers").value_or(0);
    if (a.n_expert == 0 || a.kv_lora_rank == 0 || a.nope_dim == 0 || a.value_dim == 0)
      throw ModelError(config.file_name() + ": n_routed_experts, kv_lora_rank, qk_nope_head_dim and v_head_dim "
                                            "must be positive");
  }
  if (config.rope().string("rope_type").value_or("") == "llama3")
    a.rope_freqs = llama3_rope_factors(config.rope(), a.head_dim);
  return a;
}

void add_architecture_metadata(const HfConfig& config, const HfArchitecture& a, MetadataBuilder& out) {
  out.set("general.architecture", Value::string(a.gguf_name));
  out.set("general.type", Value::string("model"));
  switch (a.family) {
    case Family::Llama: add_llama_keys(config, a, out); break;
    case Family::Qwen2:
    case Family::Qwen3: add_text_model_keys(config, a, out); break;
    case Family::Phi3: add_phi3_keys(config, a, out); break;
    case Family::Gpt2: add_gpt2_keys(config, a, out); break;
    case Family::Gemma2:
    case Family::Gemma3: add_gemma_keys(config, a, out); break;
    case Family::Deepseek2: add_deepseek_keys(config, a, out); break;
    case Family::GptOss: add_gpt_oss_keys(config, a, out); break;
  }
}

}  // namespace lamina::model::hf

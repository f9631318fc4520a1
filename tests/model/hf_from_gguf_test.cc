// Hugging Face folders of the later architectures, written by the test from
// the archs/ GGUF models (the weights under transformers' names, in its
// layout: Q/K rows in rotate-half order, one matrix per expert): loading the
// folder must give the model the GGUF file is, so its logits are the GGUF
// model's bit for bit, and those match llama.cpp (forward_test). Damaged
// folders are refused naming what is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lamina/model/config.h"
#include "lamina/model/forward.h"
#include "lamina/model/model.h"
#include "lamina/quant/reference.h"

namespace lamina::model {
namespace {

namespace fs = std::filesystem;
const fs::path kArchs = fs::path(LAMINA_TESTDATA_DIR) / "archs";

struct HfTensor {
  std::string name;
  std::vector<uint64_t> shape;  // PyTorch order
  std::vector<float> values;
  std::vector<uint8_t> bytes;   // a U8 tensor instead (MXFP4 blocks and scales)
};

// ggml rows [first, first + n) of a tensor, dequantized.
std::vector<float> rows_of(const gguf::TensorInfo& t, std::size_t first, std::size_t n) {
  const auto format = *quant::format_from_id(static_cast<uint32_t>(t.type));
  const std::size_t row_bytes = quant::row_bytes(format, t.ne[0]);
  std::vector<float> out(n * t.ne[0]);
  for (std::size_t r = 0; r < n; ++r)
    quant::dequantize_row_ref(format, t.data.data() + (first + r) * row_bytes, out.data() + r * t.ne[0], t.ne[0]);
  return out;
}

// A 2-D tensor (or expert `e` of a 3-D one) as a PyTorch [ne1, ne0] matrix.
HfTensor matrix(const gguf::GgufFile& f, const std::string& gguf_name, const std::string& hf_name, uint32_t e = 0) {
  const auto& t = f.tensor(gguf_name);
  return {hf_name, {t.ne[1], t.ne[0]}, rows_of(t, e * t.ne[1], t.ne[1]), {}};
}

HfTensor vector(const gguf::GgufFile& f, const std::string& gguf_name, const std::string& hf_name) {
  const auto& t = f.tensor(gguf_name);
  return {hf_name, {t.ne[0]}, rows_of(t, 0, 1), {}};
}

// Undoes the converter's Llama permutation: GGUF rows of each head are in
// adjacent-pair order, transformers' in rotate-half order.
HfTensor unpermute_heads(HfTensor m, uint32_t n_heads) {
  const std::size_t cols = m.shape[1], head_rows = m.shape[0] / n_heads, half = head_rows / 2;
  std::vector<float> out(m.values.size());
  for (std::size_t h = 0; h < n_heads; ++h)
    for (std::size_t i = 0; i < half; ++i)
      for (std::size_t j = 0; j < 2; ++j)
        std::memcpy(&out[(h * head_rows + j * half + i) * cols], &m.values[(h * head_rows + 2 * i + j) * cols],
                    cols * sizeof(float));
  m.values = std::move(out);
  return m;
}

void write_safetensors(const fs::path& path, const std::vector<HfTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::size_t offset = 0;
  for (const auto& t : tensors) {
    const std::size_t bytes = t.bytes.empty() ? t.values.size() * sizeof(float) : t.bytes.size();
    header[t.name] = {{"dtype", t.bytes.empty() ? "F32" : "U8"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  const std::string text = header.dump();
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xFF));
  out << text;
  for (const auto& t : tensors) {
    if (!t.bytes.empty()) {
      out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
      continue;
    }
    out.write(reinterpret_cast<const char*>(t.values.data()), static_cast<std::streamsize>(t.values.size() * 4));
  }
}

// Only ids are fed, so a tokenizer with a few words is enough for loading.
void write_tokenizer(const fs::path& dir) {
  std::ofstream(dir / "tokenizer.json")
      << R"({"model":{"type":"WordLevel","vocab":{"<unk>":0,"<s>":1,"</s>":2},"unk_token":"<unk>"},)"
         R"("pre_tokenizer":{"type":"Whitespace"}})";
}

// archs/mixtral.f32.gguf as transformers' MixtralForCausalLM stores it.
std::vector<HfTensor> mixtral_tensors(const gguf::GgufFile& f, const ModelConfig& c) {
  std::vector<HfTensor> out{matrix(f, "token_embd.weight", "model.embed_tokens.weight"),
                            vector(f, "output_norm.weight", "model.norm.weight"),
                            matrix(f, "output.weight", "lm_head.weight")};
  for (uint32_t il = 0; il < c.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".", l = "model.layers." + std::to_string(il) + ".";
    out.push_back(vector(f, b + "attn_norm.weight", l + "input_layernorm.weight"));
    out.push_back(vector(f, b + "ffn_norm.weight", l + "post_attention_layernorm.weight"));
    out.push_back(unpermute_heads(matrix(f, b + "attn_q.weight", l + "self_attn.q_proj.weight"), c.n_head));
    out.push_back(unpermute_heads(matrix(f, b + "attn_k.weight", l + "self_attn.k_proj.weight"), c.n_head_kv));
    out.push_back(matrix(f, b + "attn_v.weight", l + "self_attn.v_proj.weight"));
    out.push_back(matrix(f, b + "attn_output.weight", l + "self_attn.o_proj.weight"));
    out.push_back(matrix(f, b + "ffn_gate_inp.weight", l + "block_sparse_moe.gate.weight"));
    for (uint32_t e = 0; e < c.n_expert; ++e) {
      const std::string x = l + "block_sparse_moe.experts." + std::to_string(e) + ".";
      out.push_back(matrix(f, b + "ffn_gate_exps.weight", x + "w1.weight", e));
      out.push_back(matrix(f, b + "ffn_up_exps.weight", x + "w3.weight", e));
      out.push_back(matrix(f, b + "ffn_down_exps.weight", x + "w2.weight", e));
    }
  }
  return out;
}

// The config.json keys every class here shares, from the GGUF model's configuration.
nlohmann::json common_config(const std::string& hf_class, const ModelConfig& c) {
  return {{"architectures", {hf_class}},
          {"hidden_size", c.n_embd},
          {"num_hidden_layers", c.n_layer},
          {"num_attention_heads", c.n_head},
          {"num_key_value_heads", c.n_head_kv},
          {"vocab_size", c.n_vocab},
          {"max_position_embeddings", c.n_ctx_train},
          {"rms_norm_eps", c.norm_eps},
          {"rope_theta", c.rope.freq_base}};
}

nlohmann::json mixtral_config(const ModelConfig& c) {
  nlohmann::json j = common_config("MixtralForCausalLM", c);
  j["intermediate_size"] = c.n_ff_expert;
  j["num_local_experts"] = c.n_expert;
  j["num_experts_per_tok"] = c.n_expert_used;
  j["hidden_act"] = "silu";
  j["tie_word_embeddings"] = false;
  return j;
}

// Gemma stores its norms as (1 + w): the converter's +1 undone (exactly in
// f32 for these gains, so the round trip is lossless).
HfTensor gemma_norm(const gguf::GgufFile& f, const std::string& gguf_name, const std::string& hf_name) {
  HfTensor t = vector(f, gguf_name, hf_name);
  for (float& v : t.values) v -= 1.0f;
  return t;
}

// archs/gemma3.f32.gguf as transformers' Gemma3ForCausalLM stores it:
// per layer, GGUF name -> transformers' name (".weight" on both).
std::vector<HfTensor> gemma3_tensors(const gguf::GgufFile& f, const ModelConfig& c) {
  static constexpr std::pair<const char*, const char*> kNorms[] = {
      {"attn_norm", "input_layernorm"},      {"post_attention_norm", "post_attention_layernorm"},
      {"ffn_norm", "pre_feedforward_layernorm"}, {"post_ffw_norm", "post_feedforward_layernorm"},
      {"attn_q_norm", "self_attn.q_norm"},   {"attn_k_norm", "self_attn.k_norm"},
  };
  static constexpr std::pair<const char*, const char*> kMatrices[] = {
      {"attn_q", "self_attn.q_proj"}, {"attn_k", "self_attn.k_proj"}, {"attn_v", "self_attn.v_proj"},
      {"attn_output", "self_attn.o_proj"}, {"ffn_gate", "mlp.gate_proj"}, {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"},
  };
  std::vector<HfTensor> out{matrix(f, "token_embd.weight", "model.embed_tokens.weight"),
                            gemma_norm(f, "output_norm.weight", "model.norm.weight")};
  for (uint32_t il = 0; il < c.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".", l = "model.layers." + std::to_string(il) + ".";
    for (const auto& [g, h] : kNorms)
      out.push_back(gemma_norm(f, b + g + ".weight", l + h + ".weight"));
    for (const auto& [g, h] : kMatrices) out.push_back(matrix(f, b + g + ".weight", l + h + ".weight"));
  }
  return out;
}

nlohmann::json gemma3_config(const ModelConfig& c) {
  nlohmann::json j = common_config("Gemma3ForCausalLM", c);
  j["intermediate_size"] = c.n_ff;
  j["head_dim"] = c.head_dim_k;
  j["rope_local_base_freq"] = c.rope.freq_base_swa;
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 1.0f / c.rope.freq_scale}};
  j["sliding_window"] = c.sliding_window;
  j["sliding_window_pattern"] = c.sliding_window_pattern;
  j["query_pre_attn_scalar"] = c.head_dim_k;
  j["hidden_activation"] = "gelu_pytorch_tanh";
  j["final_logit_softcapping"] = nullptr;
  j["attn_logit_softcapping"] = nullptr;
  return j;
}

// archs/deepseek2.f32.gguf as transformers' DeepseekV2ForCausalLM stores
// it: kv_b_proj holds, per head, the key rows (attn_k_b transposed) and
// then the value rows (attn_v_b).
std::vector<HfTensor> deepseek2_tensors(const gguf::GgufFile& f, const ModelConfig& c) {
  static constexpr std::pair<const char*, const char*> kParts[] = {
      {"attn_q", "self_attn.q_proj"},         {"attn_kv_a_mqa", "self_attn.kv_a_proj_with_mqa"},
      {"attn_output", "self_attn.o_proj"},    {"ffn_gate", "mlp.gate_proj"},
      {"ffn_up", "mlp.up_proj"},              {"ffn_down", "mlp.down_proj"},
      {"ffn_gate_inp", "mlp.gate"},           {"ffn_gate_shexp", "mlp.shared_experts.gate_proj"},
      {"ffn_up_shexp", "mlp.shared_experts.up_proj"}, {"ffn_down_shexp", "mlp.shared_experts.down_proj"},
  };
  static constexpr std::pair<const char*, const char*> kNorms[] = {
      {"attn_norm", "input_layernorm"}, {"ffn_norm", "post_attention_layernorm"},
      {"attn_kv_a_norm", "self_attn.kv_a_layernorm"}};
  static constexpr std::pair<const char*, const char*> kExperts[] = {
      {"ffn_gate_exps", "gate_proj"}, {"ffn_up_exps", "up_proj"}, {"ffn_down_exps", "down_proj"}};
  std::vector<HfTensor> out{matrix(f, "token_embd.weight", "model.embed_tokens.weight"),
                            vector(f, "output_norm.weight", "model.norm.weight"),
                            matrix(f, "output.weight", "lm_head.weight")};
  const uint32_t R = c.mla.kv_lora_rank, nope = c.mla.nope_dim, v = c.mla.value_dim, rows = nope + v;
  for (uint32_t il = 0; il < c.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".", l = "model.layers." + std::to_string(il) + ".";
    for (const auto& [g, h] : kNorms) out.push_back(vector(f, b + g + ".weight", l + h + ".weight"));
    for (const auto& [g, h] : kParts) {
      if (f.find_tensor(b + g + ".weight")) out.push_back(matrix(f, b + g + ".weight", l + h + ".weight"));
    }
    if (il >= c.n_dense_lead) {
      for (uint32_t e = 0; e < c.n_expert; ++e)
        for (const auto& [g, h] : kExperts)
          out.push_back(matrix(f, b + g + ".weight", l + "mlp.experts." + std::to_string(e) + "." + h + ".weight", e));
    }
    const auto k_b = rows_of(f.tensor(b + "attn_k_b.weight"), 0, std::size_t{R} * c.n_head);  // [h][r][n]
    const auto v_b = rows_of(f.tensor(b + "attn_v_b.weight"), 0, std::size_t{v} * c.n_head);  // [h][d][r]
    HfTensor kv_b{l + "self_attn.kv_b_proj.weight", {uint64_t{rows} * c.n_head, R}, {}, {}};
    kv_b.values.resize(std::size_t{rows} * c.n_head * R);
    for (uint32_t h = 0; h < c.n_head; ++h)
      for (uint32_t r = 0; r < R; ++r) {
        for (uint32_t n = 0; n < nope; ++n) kv_b.values[(h * rows + n) * R + r] = k_b[(h * R + r) * nope + n];
        for (uint32_t d = 0; d < v; ++d) kv_b.values[(h * rows + nope + d) * R + r] = v_b[(h * v + d) * R + r];
      }
    out.push_back(std::move(kv_b));
  }
  return out;
}

nlohmann::json deepseek2_config(const ModelConfig& c) {
  nlohmann::json j = common_config("DeepseekV2ForCausalLM", c);
  j["num_key_value_heads"] = c.n_head;  // transformers' count; the latent is one shared row
  j["intermediate_size"] = c.n_ff;
  j["moe_intermediate_size"] = c.n_ff_expert;
  j["n_routed_experts"] = c.n_expert;
  j["n_shared_experts"] = c.n_expert_shared;
  j["num_experts_per_tok"] = c.n_expert_used;
  j["first_k_dense_replace"] = c.n_dense_lead;
  j["routed_scaling_factor"] = c.expert_weights_scale;
  j["norm_topk_prob"] = false;
  j["topk_method"] = "greedy";
  j["scoring_func"] = "softmax";
  j["q_lora_rank"] = nullptr;
  j["kv_lora_rank"] = c.mla.kv_lora_rank;
  j["qk_nope_head_dim"] = c.mla.nope_dim;
  j["qk_rope_head_dim"] = c.mla.rope_dim;
  j["v_head_dim"] = c.mla.value_dim;
  j["hidden_act"] = "silu";
  j["tie_word_embeddings"] = false;
  // archs/README.md: YaRN x40 over an original context of 128, mscale 0.707.
  j["rope_scaling"] = {{"type", "yarn"}, {"factor", 40}, {"original_max_position_embeddings", 128},
                       {"beta_fast", 32}, {"beta_slow", 1}, {"mscale", 0.707}, {"mscale_all_dim", 0.707}};
  return j;
}

// archs/gptoss.f32.gguf as transformers' GptOssForCausalLM stores it: the
// experts as 3-D stacks multiplied from the right, gate and up interleaved
// by column ([E, n_embd, 2F], gate at even columns), down as [E, F, n_embd].
std::vector<HfTensor> gpt_oss_tensors(const gguf::GgufFile& f, const ModelConfig& c) {
  static constexpr std::pair<const char*, const char*> kParts[] = {
      {"attn_norm.weight", "input_layernorm.weight"}, {"post_attention_norm.weight", "post_attention_layernorm.weight"},
      {"attn_sinks.weight", "self_attn.sinks"},       {"ffn_gate_inp.bias", "mlp.router.bias"},
      {"attn_q.bias", "self_attn.q_proj.bias"},       {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},       {"attn_output.bias", "self_attn.o_proj.bias"},
  };
  static constexpr std::pair<const char*, const char*> kMatrices[] = {
      {"attn_q.weight", "self_attn.q_proj.weight"}, {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"}, {"attn_output.weight", "self_attn.o_proj.weight"},
      {"ffn_gate_inp.weight", "mlp.router.weight"},
  };
  std::vector<HfTensor> out{matrix(f, "token_embd.weight", "model.embed_tokens.weight"),
                            vector(f, "output_norm.weight", "model.norm.weight"),
                            matrix(f, "output.weight", "lm_head.weight")};
  const std::size_t E = c.n_expert, H = c.n_embd, F = c.n_ff_expert;
  for (uint32_t il = 0; il < c.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".", l = "model.layers." + std::to_string(il) + ".";
    for (const auto& [g, h] : kParts) out.push_back(vector(f, b + g, l + h));
    for (const auto& [g, h] : kMatrices) out.push_back(matrix(f, b + g, l + h));
    const auto gate = rows_of(f.tensor(b + "ffn_gate_exps.weight"), 0, E * F);
    const auto up = rows_of(f.tensor(b + "ffn_up_exps.weight"), 0, E * F);
    const auto down = rows_of(f.tensor(b + "ffn_down_exps.weight"), 0, E * H);
    const auto gate_b = rows_of(f.tensor(b + "ffn_gate_exps.bias"), 0, E);
    const auto up_b = rows_of(f.tensor(b + "ffn_up_exps.bias"), 0, E);
    HfTensor gate_up{l + "mlp.experts.gate_up_proj", {E, H, 2 * F}, std::vector<float>(E * H * 2 * F), {}};
    HfTensor gate_up_bias{l + "mlp.experts.gate_up_proj_bias", {E, 2 * F}, std::vector<float>(E * 2 * F), {}};
    HfTensor down_proj{l + "mlp.experts.down_proj", {E, F, H}, std::vector<float>(E * F * H), {}};
    for (std::size_t e = 0; e < E; ++e) {
      for (std::size_t o = 0; o < F; ++o) {
        for (std::size_t i = 0; i < H; ++i) {
          gate_up.values[(e * H + i) * 2 * F + 2 * o] = gate[(e * F + o) * H + i];
          gate_up.values[(e * H + i) * 2 * F + 2 * o + 1] = up[(e * F + o) * H + i];
          down_proj.values[(e * F + o) * H + i] = down[(e * H + i) * F + o];
        }
        gate_up_bias.values[e * 2 * F + 2 * o] = gate_b[e * F + o];
        gate_up_bias.values[e * 2 * F + 2 * o + 1] = up_b[e * F + o];
      }
    }
    out.push_back(std::move(gate_up));
    out.push_back(std::move(gate_up_bias));
    out.push_back(std::move(down_proj));
    out.push_back({l + "mlp.experts.down_proj_bias", {E, H}, rows_of(f.tensor(b + "ffn_down_exps.bias"), 0, E), {}});
  }
  return out;
}

// A GGUF MXFP4 expert stack as transformers' *_blocks and *_scales: rows
// (e, o) of the GGUF stack go to checkpoint row row_of(e, o); codes in pairs
// per byte, low nibble first.
void mxfp4_to_checkpoint(const gguf::TensorInfo& t, const std::function<std::size_t(std::size_t, std::size_t)>& row_of,
                         HfTensor& blocks, HfTensor& scales) {
  const std::size_t nb = t.ne[0] / 32, rows = t.ne[1];
  const auto* src = reinterpret_cast<const uint8_t*>(t.data.data());
  for (std::size_t e = 0; e < t.ne[2]; ++e) {
    for (std::size_t o = 0; o < rows; ++o) {
      const std::size_t to = row_of(e, o);
      for (std::size_t k = 0; k < nb; ++k) {
        const uint8_t* b = src + ((e * rows + o) * nb + k) * 17;
        uint8_t c[32];
        for (int j = 0; j < 16; ++j) c[j] = b[1 + j] & 0xF, c[j + 16] = b[1 + j] >> 4;
        scales.bytes[to * nb + k] = b[0];
        for (int j = 0; j < 16; ++j) blocks.bytes[(to * nb + k) * 16 + j] = static_cast<uint8_t>(c[2 * j] | (c[2 * j + 1] << 4));
      }
    }
  }
}

// The same model with its MXFP4 experts as a released gpt-oss checkpoint
// stores them (the other matrices dequantized to F32).
std::vector<HfTensor> gpt_oss_mxfp4_tensors(const gguf::GgufFile& f, const ModelConfig& c) {
  std::vector<HfTensor> out = gpt_oss_tensors(f, c);
  std::erase_if(out, [](const HfTensor& t) {
    return t.name.ends_with("mlp.experts.gate_up_proj") || t.name.ends_with("mlp.experts.down_proj");
  });
  const std::size_t E = c.n_expert, H = c.n_embd, F = c.n_ff_expert;
  for (uint32_t il = 0; il < c.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".", l = "model.layers." + std::to_string(il) + ".mlp.experts.";
    HfTensor gu_blocks{l + "gate_up_proj_blocks", {E, 2 * F, H / 32, 16}, {}, std::vector<uint8_t>(E * 2 * F * H / 2)};
    HfTensor gu_scales{l + "gate_up_proj_scales", {E, 2 * F, H / 32}, {}, std::vector<uint8_t>(E * 2 * F * H / 32)};
    HfTensor d_blocks{l + "down_proj_blocks", {E, H, F / 32, 16}, {}, std::vector<uint8_t>(E * H * F / 2)};
    HfTensor d_scales{l + "down_proj_scales", {E, H, F / 32}, {}, std::vector<uint8_t>(E * H * F / 32)};
    for (std::size_t half : {0, 1})
      mxfp4_to_checkpoint(f.tensor(b + (half == 0 ? "ffn_gate_exps.weight" : "ffn_up_exps.weight")),
                          [&](std::size_t e, std::size_t o) { return e * 2 * F + 2 * o + half; }, gu_blocks, gu_scales);
    mxfp4_to_checkpoint(f.tensor(b + "ffn_down_exps.weight"), [&](std::size_t e, std::size_t o) { return e * H + o; },
                        d_blocks, d_scales);
    for (HfTensor* t : {&gu_blocks, &gu_scales, &d_blocks, &d_scales}) out.push_back(std::move(*t));
  }
  return out;
}

nlohmann::json gpt_oss_config(const ModelConfig& c) {
  nlohmann::json j = common_config("GptOssForCausalLM", c);
  j["intermediate_size"] = c.n_ff_expert;
  j["num_local_experts"] = c.n_expert;
  j["num_experts_per_tok"] = c.n_expert_used;
  j["head_dim"] = c.head_dim_k;
  j["sliding_window"] = c.sliding_window;
  j["layer_types"] = {"sliding_attention", "full_attention"};
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 1.0f / c.rope.freq_scale}, {"beta_fast", 32.0},
                       {"beta_slow", 1.0}, {"original_max_position_embeddings", c.rope.yarn_orig_ctx}};
  j["attention_bias"] = true;
  j["swiglu_limit"] = 7.0;
  j["tie_word_embeddings"] = false;
  return j;
}

class HfFromGguf : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kArchs / "mixtral.f32.gguf") || !fs::exists(kArchs / "gemma3.f32.gguf") ||
        !fs::exists(kArchs / "gptoss.f32.gguf"))
      GTEST_SKIP() << "test data not found at " << kArchs;
    dir_ = fs::path(testing::TempDir()) / ("lamina_hf_" + std::string(
        testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the folder of `gguf_name`, letting `edit` damage it first.
  std::unique_ptr<Model> write_folder(const std::string& gguf_name,
                                      const std::function<void(std::vector<HfTensor>&, nlohmann::json&)>& edit = {}) {
    auto model = Model::load(kArchs / gguf_name);
    const std::string_view arch = model->config().arch->name;
    const ModelConfig& c = model->config();
    const bool mxfp4 =
        arch == "gpt-oss" && model->file().tensor("blk.0.ffn_down_exps.weight").type == gguf::TensorType::MXFP4;
    auto tensors = arch == "gemma3"      ? gemma3_tensors(model->file(), c)
                   : arch == "deepseek2" ? deepseek2_tensors(model->file(), c)
                   : mxfp4               ? gpt_oss_mxfp4_tensors(model->file(), c)
                   : arch == "gpt-oss"   ? gpt_oss_tensors(model->file(), c)
                                         : mixtral_tensors(model->file(), c);
    auto config = arch == "gemma3"      ? gemma3_config(c)
                  : arch == "deepseek2" ? deepseek2_config(c)
                  : arch == "gpt-oss"   ? gpt_oss_config(c)
                                        : mixtral_config(c);
    if (edit) edit(tensors, config);
    write_safetensors(dir_ / "model.safetensors", tensors);
    std::ofstream(dir_ / "config.json") << config.dump();
    write_tokenizer(dir_);
    return model;
  }

  std::string load_error() {
    try {
      Model::load(dir_);
    } catch (const ModelError& e) {
      return e.what();
    }
    return "(loaded)";
  }

  fs::path dir_;
};

std::vector<float> logits_of(const Model& model, const std::vector<int32_t>& ids) {
  CpuForward fwd(model, {.n_ctx = 64, .kv_type = KvType::F32, .n_threads = 1});
  std::vector<TokenInput> batch;
  for (std::size_t i = 0; i < ids.size(); ++i) batch.push_back({ids[i], static_cast<uint32_t>(i), 0, true});
  const auto l = fwd.decode(batch);
  return {l.begin(), l.end()};
}

TEST_F(HfFromGguf, MixtralFolderRunsLikeItsGguf) {
  const auto gguf_model = write_folder("mixtral.f32.gguf");
  const auto hf_model = Model::load(dir_);
  const ModelConfig& c = hf_model->config();
  EXPECT_EQ(c.ffn(), FfnKind::MoeGatedSilu);
  EXPECT_EQ(c.n_expert, 4u);
  EXPECT_EQ(c.n_expert_used, 2u);
  EXPECT_EQ(c.n_ff_expert, 128u);
  const std::vector<int32_t> ids{1, 400, 37, 255, 88, 300, 12, 401, 5, 77, 17, 333};
  EXPECT_EQ(logits_of(*hf_model, ids), logits_of(*gguf_model, ids));
}

// --quantize at load takes the expert stacks too (the router stays F32, as
// llama.cpp keeps it), the same from the folder as from the GGUF file.
TEST_F(HfFromGguf, MixtralQuantizedAtLoadLikeItsGguf) {
  write_folder("mixtral.f32.gguf");
  LoadOptions options;
  options.quantize = quant::QuantFormat::Q8_0;
  const auto hf_model = Model::load(dir_, options);
  const auto gguf_model = Model::load(kArchs / "mixtral.f32.gguf", options);
  for (const char* name : {"blk.0.ffn_gate_exps.weight", "blk.1.ffn_down_exps.weight", "blk.0.attn_q.weight"})
    EXPECT_EQ(hf_model->file().tensor(name).type, gguf::TensorType::Q8_0) << name;
  EXPECT_EQ(hf_model->file().tensor("blk.0.ffn_gate_inp.weight").type, gguf::TensorType::F32);
  const std::vector<int32_t> ids{1, 400, 37, 255, 88, 300, 12, 401};
  EXPECT_EQ(logits_of(*hf_model, ids), logits_of(*gguf_model, ids));
}

TEST_F(HfFromGguf, Gemma3FolderRunsLikeItsGguf) {
  const auto gguf_model = write_folder("gemma3.f32.gguf");
  const auto hf_model = Model::load(dir_);
  const ModelConfig& c = hf_model->config();
  EXPECT_EQ(c.sliding_window_pattern, 3u);
  EXPECT_EQ(c.rope.freq_base_swa, 10000.0f);
  // Longer than the window (12), so the local layers' masking is exercised.
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < 20; ++i) ids.push_back((i * 37 + 1) % 512);
  EXPECT_EQ(logits_of(*hf_model, ids), logits_of(*gguf_model, ids));
}

TEST_F(HfFromGguf, Deepseek2FolderRunsLikeItsGguf) {
  if (!fs::exists(kArchs / "deepseek2.f32.gguf")) GTEST_SKIP() << "no deepseek2.f32.gguf";
  const auto gguf_model = write_folder("deepseek2.f32.gguf");
  const auto hf_model = Model::load(dir_);
  const ModelConfig& c = hf_model->config();
  EXPECT_TRUE(c.latent_attention());
  EXPECT_EQ(c.n_dense_lead, 1u);
  EXPECT_EQ(c.n_expert_shared, 1u);
  EXPECT_EQ(c.rope.yarn_orig_ctx, 128u);
  EXPECT_FLOAT_EQ(c.attn_scale, gguf_model->config().attn_scale);
  const std::vector<int32_t> ids{1, 400, 37, 255, 88, 300, 12, 401, 5, 77, 17, 333};
  EXPECT_EQ(logits_of(*hf_model, ids), logits_of(*gguf_model, ids));
}

// DeepSeek V3 checkpoints carry multi-token-prediction layers after the
// last one; the model does not run them, and a layer past those is refused.
TEST_F(HfFromGguf, Deepseek2PredictionLayersAreSkipped) {
  if (!fs::exists(kArchs / "deepseek2.f32.gguf")) GTEST_SKIP() << "no deepseek2.f32.gguf";
  const auto add_layer = [](std::vector<HfTensor>& tensors, const std::string& layer) {
    tensors.push_back(
        {"model.layers." + layer + ".input_layernorm.weight", {256}, std::vector<float>(256, 1.0f), {}});
  };
  const auto gguf_model = write_folder("deepseek2.f32.gguf", [&](std::vector<HfTensor>& tensors, nlohmann::json& config) {
    config["num_nextn_predict_layers"] = 1;
    add_layer(tensors, "2");
  });
  const std::vector<int32_t> ids{1, 400, 37, 255, 88};
  EXPECT_EQ(logits_of(*Model::load(dir_), ids), logits_of(*gguf_model, ids));
  write_folder("deepseek2.f32.gguf", [&](std::vector<HfTensor>& tensors, nlohmann::json& config) {
    config["num_nextn_predict_layers"] = 1;
    add_layer(tensors, "3");
  });
  const std::string e = load_error();
  EXPECT_NE(e.find("'model.layers.3.input_layernorm.weight' has no place"), std::string::npos) << e;
}

TEST_F(HfFromGguf, Deepseek2GroupLimitedRoutingAndBadKvBAreRefused) {
  if (!fs::exists(kArchs / "deepseek2.f32.gguf")) GTEST_SKIP() << "no deepseek2.f32.gguf";
  write_folder("deepseek2.f32.gguf", [](std::vector<HfTensor>&, nlohmann::json& config) {
    config["n_group"] = 8;
    config["topk_group"] = 3;
  });
  std::string e = load_error();
  EXPECT_NE(e.find("topk_group"), std::string::npos) << e;
  write_folder("deepseek2.f32.gguf", [](std::vector<HfTensor>&, nlohmann::json& config) {
    config["v_head_dim"] = 32;
  });
  e = load_error();
  EXPECT_NE(e.find("'model.layers.0.self_attn.kv_b_proj.weight' is not [384, 128]"), std::string::npos) << e;
}

// Unquantized experts only: the *_blocks / *_scales (MXFP4) tensors real
// gpt-oss checkpoints ship are not read yet.
TEST_F(HfFromGguf, GptOssFolderRunsLikeItsGguf) {
  const auto gguf_model = write_folder("gptoss.f32.gguf");
  const auto hf_model = Model::load(dir_);
  const ModelConfig& c = hf_model->config();
  EXPECT_EQ(c.arch->name, "gpt-oss");
  EXPECT_EQ(c.rope.yarn_orig_ctx, 128u);
  EXPECT_EQ(c.sliding_window, 8u);
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < 14; ++i) ids.push_back((i * 37 + 1) % 512);  // past the window of 8
  EXPECT_EQ(logits_of(*hf_model, ids), logits_of(*gguf_model, ids));
}

// A released checkpoint's MXFP4 experts load as the very MXFP4 blocks
// llama.cpp's converter writes (the GGUF file's bytes), and run.
TEST_F(HfFromGguf, GptOssMxfp4ExpertsLoadAsTheirGgufBlocks) {
  const auto gguf_model = write_folder("gptoss.mxfp4_moe.gguf");
  const auto hf_model = Model::load(dir_);
  for (const char* name : {"blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight", "blk.1.ffn_down_exps.weight"}) {
    const auto& ours = hf_model->file().tensor(name);
    const auto& theirs = gguf_model->file().tensor(name);
    EXPECT_EQ(ours.type, gguf::TensorType::MXFP4) << name;
    EXPECT_EQ(ours.shape().size(), 3u) << name;
    EXPECT_TRUE(std::equal(ours.data.begin(), ours.data.end(), theirs.data.begin(), theirs.data.end())) << name;
  }
  const auto logits = logits_of(*hf_model, {1, 400, 37, 255, 88, 300, 12, 401, 5, 77});
  for (float l : logits) ASSERT_TRUE(std::isfinite(l));
}

// Damaged gpt-oss folders (and YaRN outside gpt-oss), each refused naming
// what is wrong.
TEST_F(HfFromGguf, GptOssDamageIsNamed) {
  using Edit = std::function<void(std::vector<HfTensor>&, nlohmann::json&)>;
  const struct {
    const char* gguf;
    Edit edit;
    const char* message;
  } kCases[] = {
      {"gptoss.f32.gguf",
       [](std::vector<HfTensor>& tensors, nlohmann::json&) {
         for (auto& t : tensors) {
           if (t.name == "model.layers.1.mlp.experts.down_proj") t.shape = {t.shape[0], t.shape[2], t.shape[1]};
         }
       },
       "'model.layers.1.mlp.experts.down_proj' does not have the shape [4, 128, 256]"},
      {"gptoss.f32.gguf",
       [](std::vector<HfTensor>& tensors, nlohmann::json&) {
         std::erase_if(tensors,
                       [](const HfTensor& t) { return t.name == "model.layers.0.mlp.experts.gate_up_proj_bias"; });
       },
       "the experts of layer 0 have no 'gate_up_proj_bias'"},
      {"gptoss.f32.gguf",
       [](std::vector<HfTensor>&, nlohmann::json& config) {
         config["layer_types"] = {"full_attention", "sliding_attention"};
       },
       "layer 0 is not 'sliding_attention'"},
      {"mixtral.f32.gguf",
       [](std::vector<HfTensor>&, nlohmann::json& config) {
         config["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
       },
       "rope_type yarn is only read for gpt-oss and DeepSeek models"},
      {"gptoss.mxfp4_moe.gguf",
       [](std::vector<HfTensor>& tensors, nlohmann::json&) {
         std::erase_if(tensors, [](const HfTensor& t) { return t.name == "model.layers.1.mlp.experts.down_proj_scales"; });
       },
       "the experts of layer 1 have no 'down_proj_scales'"},
      {"gptoss.mxfp4_moe.gguf",
       [](std::vector<HfTensor>& tensors, nlohmann::json&) {
         for (auto& t : tensors) {
           if (t.name == "model.layers.0.mlp.experts.gate_up_proj_scales") t.shape = {4, 128, 16};
         }
       },
       "'model.layers.0.mlp.experts.gate_up_proj_scales' does not have the shape [4, 256, 8]"},
  };
  for (const auto& c : kCases) {
    write_folder(c.gguf, c.edit);
    const std::string e = load_error();
    EXPECT_NE(e.find(c.message), std::string::npos) << e;
  }
}

TEST_F(HfFromGguf, Gemma3LayerTypesOffThePatternAreRefused) {
  write_folder("gemma3.f32.gguf", [](std::vector<HfTensor>&, nlohmann::json& config) {
    config["layer_types"] = {"sliding_attention", "full_attention", "full_attention"};
  });
  const std::string e = load_error();
  EXPECT_NE(e.find("layer_types"), std::string::npos) << e;
  EXPECT_NE(e.find("layer 1 is not 'sliding_attention'"), std::string::npos) << e;
}

TEST_F(HfFromGguf, MissingExpertIsNamed) {
  write_folder("mixtral.f32.gguf", [](std::vector<HfTensor>& tensors, nlohmann::json&) {
    std::erase_if(tensors, [](const HfTensor& t) { return t.name == "model.layers.1.block_sparse_moe.experts.2.w3.weight"; });
  });
  const std::string e = load_error();
  EXPECT_NE(e.find("expert 2 of 'blk.1.ffn_up_exps.weight' is missing"), std::string::npos) << e;
}

TEST_F(HfFromGguf, ExpertOutsideTheCountIsRefused) {
  write_folder("mixtral.f32.gguf", [](std::vector<HfTensor>&, nlohmann::json& config) {
    config["num_local_experts"] = 3;
  });
  const std::string e = load_error();
  EXPECT_NE(e.find("model.layers.0.block_sparse_moe.experts.3."), std::string::npos) << e;
}

TEST_F(HfFromGguf, ExpertOfAnotherShapeIsNamed) {
  write_folder("mixtral.f32.gguf", [](std::vector<HfTensor>& tensors, nlohmann::json&) {
    for (auto& t : tensors) {
      if (t.name != "model.layers.0.block_sparse_moe.experts.1.w2.weight") continue;
      t.shape = {t.shape[1], t.shape[0]};
    }
  });
  const std::string e = load_error();
  EXPECT_NE(e.find("'model.layers.0.block_sparse_moe.experts.1.w2.weight' does not have the 2-D shape"),
            std::string::npos)
      << e;
}

TEST_F(HfFromGguf, TooManyExpertsPerTokenIsRefused) {
  write_folder("mixtral.f32.gguf", [](std::vector<HfTensor>&, nlohmann::json& config) {
    config["num_experts_per_tok"] = 5;
  });
  const std::string e = load_error();
  EXPECT_NE(e.find("expert_used_count 5 must be in 1..expert_count (4)"), std::string::npos) << e;
}

}  // namespace
}  // namespace lamina::model

// Gemma3 folders (hf_from_gguf.h): norms stored as (1 + w), local and
// global layers by layer_types.
#include "hf_from_gguf.h"

namespace lamina::model::hf_test {
namespace {

// Gemma stores its norms as (1 + w): the converter's +1 undone (exactly in
// f32 for these gains, so the round trip is lossless).
HfTensor gemma_norm(const gguf::GgufFile& f, const std::string& gguf_name, const std::string& hf_name) {
  HfTensor t = vector(f, gguf_name, hf_name);
  for (float& v : t.values) v -= 1.0f;
  return t;
}

}  // namespace

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

namespace {

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

TEST_F(HfFromGguf, Gemma3LayerTypesOffThePatternAreRefused) {
  write_folder("gemma3.f32.gguf", [](std::vector<HfTensor>&, nlohmann::json& config) {
    config["layer_types"] = {"sliding_attention", "full_attention", "full_attention"};
  });
  const std::string e = load_error();
  EXPECT_NE(e.find("layer_types"), std::string::npos) << e;
  EXPECT_NE(e.find("layer 1 is not 'sliding_attention'"), std::string::npos) << e;
}

}  // namespace
}  // namespace lamina::model::hf_test

// DeepSeek-V2 folders (hf_from_gguf.h): kv_b_proj split into the latent
// expansions, leading dense layers, prediction layers skipped.
#include "hf_from_gguf.h"

namespace lamina::model::hf_test {

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

namespace {

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

}  // namespace
}  // namespace lamina::model::hf_test

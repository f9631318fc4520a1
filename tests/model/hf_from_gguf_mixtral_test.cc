// Mixtral folders (hf_from_gguf.h): experts one matrix each, Q/K rows in
// rotate-half order; damaged expert tensors and counts are refused.
#include "hf_from_gguf.h"

#include <cstring>

#include "lamina/model/forward.h"

namespace lamina::model::hf_test {
namespace {

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

}  // namespace

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

nlohmann::json mixtral_config(const ModelConfig& c) {
  nlohmann::json j = common_config("MixtralForCausalLM", c);
  j["intermediate_size"] = c.n_ff_expert;
  j["num_local_experts"] = c.n_expert;
  j["num_experts_per_tok"] = c.n_expert_used;
  j["hidden_act"] = "silu";
  j["tie_word_embeddings"] = false;
  return j;
}

namespace {

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
}  // namespace lamina::model::hf_test

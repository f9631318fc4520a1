// gpt-oss folders (hf_from_gguf.h): experts as 3-D stacks (unquantized, or
// MXFP4 blocks and scales as released checkpoints ship them), and damaged
// folders refused naming what is wrong.
#include "hf_from_gguf.h"

#include <algorithm>
#include <cmath>

namespace lamina::model::hf_test {
namespace {

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

}  // namespace

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

namespace {

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

}  // namespace
}  // namespace lamina::model::hf_test

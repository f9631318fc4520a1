// Variants of the archs/ models (a key or tensor changed in memory): hostile
// ones fail with a ModelError naming the key or tensor, never a crash; others
// read as llama.cpp reads them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/model/config.h"
#include "lamina/model/gpu_forward.h"
#include "lamina/model/model.h"
#include "lamina/model/weights.h"

namespace lamina::model {
namespace {

namespace fs = std::filesystem;
const fs::path kArchs = fs::path(LAMINA_TESTDATA_DIR) / "archs";

using Edit = std::function<void(std::vector<gguf::KeyValue>&, std::vector<gguf::TensorInfo>&)>;

// The message of loading `model` after `edit`, or "(loaded)".
std::string load_error(const std::string& model, const Edit& edit) {
  const auto original = gguf::GgufFile::open(kArchs / (model + ".gguf"));
  auto metadata = original.metadata();
  auto tensors = original.tensors();
  edit(metadata, tensors);
  const auto file = gguf::GgufFile::assemble(std::move(metadata), std::move(tensors), nullptr);
  try {
    const ModelConfig config = load_config(file);
    bind_weights(file, config);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "(loaded)";
}

Edit set_key(const std::string& key, gguf::Value value) {
  return [=](std::vector<gguf::KeyValue>& md, std::vector<gguf::TensorInfo>&) {
    for (auto& kv : md) {
      if (kv.key == key) {
        kv.value = value;
        return;
      }
    }
    md.push_back({key, value});
  };
}

Edit drop_key(const std::string& key) {
  return [=](std::vector<gguf::KeyValue>& md, std::vector<gguf::TensorInfo>&) {
    std::erase_if(md, [&](const gguf::KeyValue& kv) { return kv.key == key; });
  };
}

Edit drop_tensor(const std::string& name) {
  return [=](std::vector<gguf::KeyValue>&, std::vector<gguf::TensorInfo>& tensors) {
    std::erase_if(tensors, [&](const gguf::TensorInfo& t) { return t.name == name; });
  };
}

class ArchErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kArchs / "mixtral.f32.gguf") || !fs::exists(kArchs / "gemma3.f32.gguf") ||
        !fs::exists(kArchs / "gptoss.f32.gguf"))
      GTEST_SKIP() << "test data not found at " << kArchs;
  }
};

TEST_F(ArchErrors, MixtralExpertCounts) {
  EXPECT_EQ(load_error("mixtral.f32", set_key("llama.expert_used_count", gguf::Value::u32(5))),
            "llama: expert_used_count 5 must be in 1..expert_count (4)");
  EXPECT_EQ(load_error("mixtral.f32", set_key("llama.expert_used_count", gguf::Value::u32(0))),
            "llama: expert_used_count 0 must be in 1..expert_count (4)");
  EXPECT_EQ(load_error("mixtral.f32", set_key("llama.expert_count", gguf::Value::u32(8))),
            "tensor 'blk.0.ffn_gate_inp.weight' has shape [256, 4], expected [256, 8]");
  EXPECT_EQ(load_error("mixtral.f32", set_key("llama.expert_count", gguf::Value::u32(4000000000u))),
            "tensor 'blk.0.ffn_gate_inp.weight' has shape [256, 4], expected [256, 4000000000]");
}

TEST_F(ArchErrors, MixtralTensors) {
  EXPECT_EQ(load_error("mixtral.f32", drop_tensor("blk.1.ffn_down_exps.weight")),
            "missing tensor 'blk.1.ffn_down_exps.weight'");
  EXPECT_EQ(load_error("mixtral.f32", set_key("llama.feed_forward_length", gguf::Value::u32(256))),
            "tensor 'blk.0.ffn_gate_exps.weight' has shape [256, 128, 4], expected [256, 256, 4]");
  // Without expert_count the file is a dense llama, which it is not.
  EXPECT_EQ(load_error("mixtral.f32", set_key("llama.expert_count", gguf::Value::u32(0))),
            "missing tensor 'blk.0.ffn_gate.weight'");
}

TEST_F(ArchErrors, Gemma3Keys) {
  EXPECT_EQ(load_error("gemma3.f32", set_key("gemma3.attention.sliding_window_pattern", gguf::Value::u32(0))),
            "gemma3: attention.sliding_window_pattern must be positive");
  EXPECT_EQ(load_error("gemma3.f32", set_key("gemma3.rope.freq_base_swa", gguf::Value::f32(-1.0f))),
            "gemma3: rope.freq_base_swa must be positive");
  EXPECT_EQ(load_error("gemma3.f32", drop_tensor("blk.2.attn_k_norm.weight")),
            "missing tensor 'blk.2.attn_k_norm.weight'");
  EXPECT_EQ(load_error("gemma3.f32", drop_tensor("blk.0.post_ffw_norm.weight")),
            "missing tensor 'blk.0.post_ffw_norm.weight'");
}

Edit reshape_tensor(const std::string& name, uint64_t ne0, uint64_t ne1) {
  return [=](std::vector<gguf::KeyValue>&, std::vector<gguf::TensorInfo>& tensors) {
    for (auto& t : tensors) {
      if (t.name == name) t.ne = {ne0, ne1, 1, 1};
    }
  };
}

// Damaged gpt-oss files and the message each gives.
TEST_F(ArchErrors, GptOssTensorsAndKeys) {
  const struct {
    const char* model;
    Edit edit;
    const char* message;
  } kCases[] = {
      {"gptoss.f32", drop_tensor("blk.1.attn_sinks.weight"), "missing tensor 'blk.1.attn_sinks.weight'"},
      {"gptoss.f32", drop_tensor("blk.0.ffn_gate_inp.bias"), "missing tensor 'blk.0.ffn_gate_inp.bias'"},
      {"gptoss.f32", drop_tensor("blk.0.post_attention_norm.weight"),
       "missing tensor 'blk.0.post_attention_norm.weight'"},
      {"gptoss.f32", reshape_tensor("blk.0.ffn_up_exps.bias", 64, 8),
       "tensor 'blk.0.ffn_up_exps.bias' has shape [64, 8], expected [128, 4]"},
      {"gptoss.mxfp4_moe", set_key("gpt-oss.expert_feed_forward_length", gguf::Value::u32(96)),
       "tensor 'blk.0.ffn_gate_exps.weight' has shape [256, 128, 4], expected [256, 96, 4]"},
      {"gptoss.f32", set_key("gpt-oss.rope.scaling.factor", gguf::Value::f32(0.5f)),
       "gpt-oss: rope.scaling.factor 0.500000 must be at least 1 for YaRN"},
      {"gptoss.f32", set_key("gpt-oss.rope.scaling.original_context_length", gguf::Value::u32(0)),
       "gpt-oss: YaRN needs rope.scaling.original_context_length (or context_length)"},
      {"gptoss.f32", set_key("gpt-oss.rope.scaling.yarn_beta_fast", gguf::Value::f32(-1.0f)),
       "gpt-oss: rope.scaling.yarn_beta_fast and yarn_beta_slow must be positive"},
  };
  for (const auto& c : kCases) EXPECT_EQ(load_error(c.model, c.edit), c.message);
}

TEST_F(ArchErrors, GptOssKeysReadAsLlamaCppReadsThem) {
  const auto file = gguf::GgufFile::open(kArchs / "gptoss.f32.gguf");
  const ModelConfig c = load_config(file);
  EXPECT_EQ(c.rope.yarn_orig_ctx, 128u);
  EXPECT_FLOAT_EQ(c.rope.freq_scale, 1.0f / 32);
  EXPECT_EQ(c.sliding_window, 8u);
  EXPECT_TRUE(c.layer_uses_window(0));
  EXPECT_FALSE(c.layer_uses_window(1));
}

// Gemma 3 27B (62 layers) scales scores by 1/sqrt(n_embd / n_head), as
// llama.cpp does for a file without attention.scale; other sizes by the head
// size. Here n_embd / n_head = 256 / 2 = 128 against a head size of 64.
TEST_F(ArchErrors, Gemma3LargestSizeAttentionScale) {
  const auto original = gguf::GgufFile::open(kArchs / "gemma3.f32.gguf");
  for (const uint32_t n_layer : {3u, 62u}) {
    auto metadata = original.metadata();
    auto tensors = original.tensors();
    set_key("gemma3.attention.head_count", gguf::Value::u32(2))(metadata, tensors);
    set_key("gemma3.block_count", gguf::Value::u32(n_layer))(metadata, tensors);
    const auto file = gguf::GgufFile::assemble(std::move(metadata), std::move(tensors), nullptr);
    const ModelConfig c = load_config(file);
    EXPECT_FLOAT_EQ(c.attn_scale, 1.0f / std::sqrt(n_layer == 62 ? 128.0f : 64.0f)) << n_layer << " layers";
  }
}

// Each edit of deepseek2.f32 and the message it must give.
struct Refusal {
  Edit edit;
  std::string message;
};

Edit both(Edit a, Edit b) {
  return [=](std::vector<gguf::KeyValue>& md, std::vector<gguf::TensorInfo>& t) { a(md, t), b(md, t); };
}

TEST_F(ArchErrors, Deepseek2HostileFiles) {
  if (!fs::exists(kArchs / "deepseek2.f32.gguf")) GTEST_SKIP() << "no deepseek2.f32.gguf";
  using gguf::Value;
  const std::string k = "deepseek2.";
  const Refusal refusals[] = {
      // Latent attention.
      {set_key(k + "attention.head_count_kv", Value::u32(4)),
       "deepseek2: attention.head_count_kv is 4 (latent attention caches one shared row: 1)"},
      {drop_key(k + "attention.key_length_mla"),
       "deepseek2: missing attention.key_length_mla / value_length_mla (a file from before the split "
       "attn_k_b/attn_v_b layout: convert it again with a current converter)"},
      {set_key(k + "attention.key_length_mla", Value::u32(32)),
       "deepseek2: attention.key_length_mla 32 must exceed rope.dimension_count 32"},
      {set_key(k + "attention.kv_lora_rank", Value::u32(0)), "deepseek2: attention.kv_lora_rank must be positive"},
      {set_key(k + "attention.kv_lora_rank", Value::u32(96)),
       "deepseek2: attention.key_length 160 must be kv_lora_rank + rope.dimension_count (128)"},
      {drop_key(k + "attention.kv_lora_rank"), "missing metadata key 'deepseek2.attention.kv_lora_rank'"},
      {drop_tensor("blk.1.attn_k_b.weight"), "missing tensor 'blk.1.attn_k_b.weight'"},
      {set_key(k + "attention.q_lora_rank", Value::u32(64)), "missing tensor 'blk.0.attn_q_a.weight'"},
      {set_key(k + "rope.scaling.factor", Value::f32(0.5f)), "deepseek2: rope.scaling.factor 0.500000 must be at least 1 for YaRN"},
      {set_key(k + "rope.scaling.yarn_beta_fast", Value::f32(-1.0f)),
       "deepseek2: rope.scaling.yarn_beta_fast and yarn_beta_slow must be positive"},
      {set_key(k + "rope.scaling.original_context_length", Value::u32(0)),
       "deepseek2: YaRN needs rope.scaling.original_context_length (or context_length)"},
      // Experts; with 2 leading dense layers, layer 1 needs dense tensors it does not have.
      {set_key(k + "leading_dense_block_count", Value::u32(3)),
       "deepseek2: leading_dense_block_count 3 exceeds block_count 2"},
      {set_key(k + "leading_dense_block_count", Value::u32(2)), "missing tensor 'blk.1.ffn_gate.weight'"},
      {set_key(k + "expert_gating_func", Value::u32(3)),
       "deepseek2: expert_gating_func 3 is not supported (1 softmax, 2 sigmoid)"},
      {set_key(k + "expert_weights_scale", Value::f32(NAN)), "deepseek2: expert_weights_scale must be positive"},
      {set_key(k + "expert_weights_norm", Value::u32(1)), "metadata 'deepseek2.expert_weights_norm' is not a boolean"},
      {set_key(k + "expert_shared_count", Value::u32(2)),
       "tensor 'blk.1.ffn_gate_shexp.weight' has shape [256, 128], expected [256, 256]"},
      {drop_tensor("blk.1.ffn_down_shexp.weight"), "missing tensor 'blk.1.ffn_down_shexp.weight'"},
      {both(set_key(k + "expert_group_count", Value::u32(2)), set_key(k + "expert_group_used_count", Value::u32(1))),
       "deepseek2: group-limited expert routing (expert_group_count 2, expert_group_used_count 1) is not "
       "supported"},
  };
  for (const Refusal& r : refusals) EXPECT_EQ(load_error("deepseek2.f32", r.edit), r.message);
}

TEST_F(ArchErrors, Deepseek2ReadAsLlamaCppReadsIt) {
  if (!fs::exists(kArchs / "deepseek2.f32.gguf")) GTEST_SKIP() << "no deepseek2.f32.gguf";
  // Softmax, no renormalisation, x2.
  const auto file = gguf::GgufFile::open(kArchs / "deepseek2.f32.gguf");
  const ModelConfig c = load_config(file);
  EXPECT_EQ(c.expert_gating, ExpertGating::Softmax);
  EXPECT_FALSE(c.expert_weights_norm);
  EXPECT_EQ(c.expert_weights_scale, 2.0f);
  EXPECT_EQ(c.n_dense_lead, 1u);
  EXPECT_EQ(c.mla.nope_dim, 64u);
  EXPECT_EQ(c.mla.value_dim, 64u);
  // mscale^2 / sqrt(96), mscale = 1 + 0.0707 ln 40 (archs/README.md: 0.162241).
  EXPECT_NEAR(c.attn_scale, 0.162241f, 1e-6f);
}

}  // namespace
}  // namespace lamina::model

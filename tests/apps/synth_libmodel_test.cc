// The synthetic models in libmodel: their tokenizers encode and decode text
// (the vocabulary is usable, not only well-formed), and the presets of the
// later architectures load as what they imitate and run a forward pass.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/model/forward.h"
#include "lamina/model/model.h"
#include "lamina/model/tokenizer.h"
#include "lamina/model/weights.h"
#include "tool_runner.h"

namespace lamina::apps_test {
namespace {

const std::string kSynth = LAMINA_SYNTH_EXE;

// Writes `preset` into `dir` (extra arguments after the output path).
std::filesystem::path write_preset(const ScratchDir& dir, const std::string& preset,
                                   const std::vector<std::string>& extra = {}) {
  const auto path = dir / (preset + ".gguf");
  std::vector<std::string> args{preset, path.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const ToolResult r = run_tool(kSynth, args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return path;
}

TEST(SynthTokenizer, EncodesAndDecodesText) {
  ScratchDir dir("synth_tokenizer");
  for (const std::string preset : {"tiny", "tiny-llama"}) {
    SCOPED_TRACE(preset);
    const auto file = gguf::GgufFile::open(write_preset(dir, preset));
    const auto tokenizer = model::Tokenizer::from_gguf(file);
    EXPECT_EQ(tokenizer.kind(), model::TokenizerKind::BytePairEncoding);
    EXPECT_EQ(tokenizer.n_vocab(), 1024);

    const std::string text =
        "The quick brown fox jumps over the lazy dog.\n  Ünïcödé, digits 12345,\ttabs and 🙂";
    const std::vector<int32_t> ids = tokenizer.encode(text, false, false);
    EXPECT_LT(ids.size(), text.size()) << "merges should join some bytes";
    EXPECT_EQ(tokenizer.decode(ids), text);

    // Special tokens in the text become their ids when asked to.
    const std::vector<int32_t> chat = tokenizer.encode("<|im_end|>hi", false, true);
    ASSERT_FALSE(chat.empty());
    EXPECT_EQ(chat.front(), tokenizer.eos_id());
  }
}

TEST(SynthModel, LaterArchitecturePresetsRun) {
  ScratchDir dir("synth_model_load");
  for (const std::string preset : {"tiny-mixtral", "tiny-gemma3", "tiny-gpt-oss", "tiny-deepseek2"}) {
    SCOPED_TRACE(preset);
    const std::string type = preset == "tiny-gpt-oss" ? "MXFP4_MOE" : "Q4_K_M";
    const auto model = model::Model::load(write_preset(dir, preset, {"--type", type}));
    const model::ModelConfig& c = model->config();
    if (preset == "tiny-mixtral") {
      EXPECT_EQ(c.ffn(), model::FfnKind::MoeGatedSilu);
      EXPECT_EQ(c.n_expert, 4u);
      EXPECT_EQ(c.n_expert_used, 2u);
    } else if (preset == "tiny-gpt-oss") {
      EXPECT_TRUE(c.arch->attention_sinks);
      EXPECT_EQ(c.rope.yarn_orig_ctx, 4096u);
      EXPECT_EQ(model->weights().layers[0].gate_exps.format, quant::QuantFormat::MXFP4);
      EXPECT_EQ(model->weights().layers[0].wq.format, quant::QuantFormat::Q8_0);
    } else if (preset == "tiny-deepseek2") {
      EXPECT_TRUE(c.latent_attention());
      EXPECT_EQ(c.n_dense_lead, 1u);
      EXPECT_EQ(c.n_expert_shared, 1u);
      EXPECT_EQ(c.mla.kv_lora_rank, 128u);
    } else {
      EXPECT_EQ(c.arch->name, "gemma3");
      EXPECT_EQ(c.sliding_window_pattern, 3u);
      EXPECT_TRUE(c.layer_uses_swa_rope(0));
      EXPECT_FALSE(c.layer_uses_swa_rope(2));
    }
    model::CpuForward fwd(*model, {.n_ctx = 64, .n_threads = 1});
    std::vector<model::TokenInput> batch;
    for (uint32_t i = 0; i < 20; ++i) batch.push_back({static_cast<int32_t>(i * 37 % 1024), i, 0, i == 19});
    const auto logits = fwd.decode(batch);
    ASSERT_EQ(logits.size(), c.n_vocab);
    for (float l : logits) ASSERT_TRUE(std::isfinite(l));
  }
}

}  // namespace
}  // namespace lamina::apps_test

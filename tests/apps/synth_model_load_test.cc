// The presets of the later architectures (tiny shapes) load in libmodel as
// the architecture they imitate and run a forward pass with finite logits.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "lamina/model/forward.h"
#include "lamina/model/model.h"
#include "tool_runner.h"

namespace lamina::apps_test {
namespace {

const std::string kSynth = LAMINA_SYNTH_EXE;

TEST(SynthModelLoad, LaterArchitecturePresetsRun) {
  ScratchDir dir("synth_model_load");
  for (const std::string preset : {"tiny-mixtral", "tiny-gemma3"}) {
    SCOPED_TRACE(preset);
    const auto path = dir / (preset + ".gguf");
    const ToolResult r = run_tool(kSynth, {preset, path.string(), "--type", "Q4_K_M"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto model = model::Model::load(path);
    const model::ModelConfig& c = model->config();
    if (preset == "tiny-mixtral") {
      EXPECT_EQ(c.ffn(), model::FfnKind::MoeGatedSilu);
      EXPECT_EQ(c.n_expert, 4u);
      EXPECT_EQ(c.n_expert_used, 2u);
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

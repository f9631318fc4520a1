// lamina-convert end to end: each Hugging Face folder of the test data written
// as an f32 GGUF gives the same logits as the folder itself, with the same
// metadata; the other output types, and the errors a user can run into.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "lamina/gguf/file.h"
#include "lamina/model/forward.h"
#include "lamina/model/hf_model.h"
#include "lamina/model/model.h"
#include "tool_runner.h"

namespace lamina::apps_test {
namespace {

namespace fs = std::filesystem;
using gguf::TensorType;

const std::string kConvert = LAMINA_CONVERT_EXE;

fs::path hf_dir(const std::string& name) {
  const fs::path root = testdata_dir();
  return root.empty() ? fs::path() : root / "hf" / name;
}

// Logits of every position of the public prompt, computed exactly.
std::vector<float> prompt_logits(const model::Model& m) {
  const std::vector<int32_t> prompt = {1, 400, 37, 255, 88, 300, 12, 401};
  model::CpuForward fwd(m, {.n_ctx = 16, .n_threads = 1, .exact_activations = true});
  std::vector<model::TokenInput> batch;
  for (std::size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], static_cast<uint32_t>(i), 0, true});
  const auto logits = fwd.decode(batch);
  return {logits.begin(), logits.end()};
}

class ConvertFolder : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvertFolder, F32GgufRunsLikeTheFolder) {
  const fs::path dir = hf_dir(GetParam());
  if (dir.empty() || !fs::exists(dir)) GTEST_SKIP() << "test data not found";
  ScratchDir scratch("convert");
  const fs::path out = scratch / (GetParam() + ".gguf");
  const ToolResult r = run_tool(kConvert, {dir.string(), out.string(), "--type", "f32"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("token_embd.weight"), std::string::npos) << "no per-tensor progress:\n" << r.output;

  // The file says what the folder says, with every tensor stored as F32.
  const gguf::GgufFile written = gguf::GgufFile::open(out);
  const gguf::GgufFile folder = model::load_hf_model(dir);
  ASSERT_EQ(written.metadata().size(), folder.metadata().size());
  for (const auto& kv : folder.metadata()) {
    const gguf::Value* v = written.find(kv.key);
    ASSERT_NE(v, nullptr) << kv.key;
    if (kv.key == "general.file_type") {
      EXPECT_EQ(v->as<uint32_t>(), 0u);  // ALL_F32
    } else {
      EXPECT_TRUE(*v == kv.value) << kv.key;
    }
  }
  ASSERT_EQ(written.tensors().size(), folder.tensors().size());
  for (const auto& t : folder.tensors()) {
    const gguf::TensorInfo& w = written.tensor(t.name);
    EXPECT_EQ(w.type, TensorType::F32) << t.name;
    EXPECT_TRUE(std::equal(w.shape().begin(), w.shape().end(), t.shape().begin(), t.shape().end())) << t.name;
  }

  const auto from_gguf = prompt_logits(*model::Model::load(out));
  const auto from_folder = prompt_logits(*model::Model::load(dir));
  ASSERT_EQ(from_gguf.size(), from_folder.size());
  double max_diff = 0;
  for (std::size_t i = 0; i < from_gguf.size(); ++i)
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(from_gguf[i]) - from_folder[i]));
  // The same numbers either way (bf16 weights widen to f32 exactly, and the
  // exact kernels widen them the same way), so the same logits, bit for bit.
  EXPECT_EQ(max_diff, 0.0);
  std::printf("%-10s converted f32 GGUF vs folder: max |diff| %.3g\n", GetParam().c_str(), max_diff);
}

INSTANTIATE_TEST_SUITE_P(Folders, ConvertFolder,
                         ::testing::Values("llama", "llama-spm", "qwen2", "qwen2-bf16", "qwen3", "phi3", "gpt2",
                                           "gemma2", "mistral"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(Convert, OtherTypesStoreWeightsInThem) {
  const fs::path dir = hf_dir("qwen2-bf16");
  if (dir.empty() || !fs::exists(dir)) GTEST_SKIP() << "test data not found";
  ScratchDir scratch("convert_types");
  for (const auto& [type, want, file_type] : {std::tuple{"bf16", TensorType::BF16, 32u},
                                              std::tuple{"f16", TensorType::F16, 1u},
                                              std::tuple{"q8_0", TensorType::Q8_0, 7u}}) {
    const fs::path out = scratch / (std::string(type) + ".gguf");
    const ToolResult r = run_tool(kConvert, {dir.string(), out.string(), "--type", type});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const gguf::GgufFile f = gguf::GgufFile::open(out);
    EXPECT_EQ(f.get_u32("general.file_type"), file_type) << type;
    EXPECT_EQ(f.tensor("blk.0.attn_q.weight").type, want) << type;
    EXPECT_EQ(f.tensor("blk.0.attn_q.bias").type, TensorType::F32) << type;
    EXPECT_EQ(f.tensor("output_norm.weight").type, TensorType::F32) << type;
    EXPECT_NO_THROW(model::Model::load(out)) << type;
  }
}

TEST(Convert, RefusesToOverwriteItsInput) {
  const fs::path dir = hf_dir("gpt2");
  if (dir.empty() || !fs::exists(dir)) GTEST_SKIP() << "test data not found";
  for (const fs::path& target : {dir, dir / "model.safetensors", dir / "config.json"}) {
    const ToolResult r = run_tool(kConvert, {dir.string(), target.string(), "--type", "f32"});
    EXPECT_EQ(r.exit_code, 1) << target;
    EXPECT_NE(r.output.find("refusing to overwrite"), std::string::npos) << r.output;
  }
}

TEST(Convert, LeavesNoFileWhenItFails) {
  ScratchDir scratch("convert_fail");
  const fs::path out = scratch / "out.gguf";
  // Not a model folder.
  ToolResult r = run_tool(kConvert, {scratch.path().string(), out.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("not a Hugging Face model folder"), std::string::npos) << r.output;
  // An unknown type.
  const fs::path dir = hf_dir("gpt2");
  if (!dir.empty() && fs::exists(dir)) {
    r = run_tool(kConvert, {dir.string(), out.string(), "--type", "q9_9"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find("unknown type 'q9_9'"), std::string::npos) << r.output;
  }
  EXPECT_EQ(scratch.entries(), std::vector<std::string>{});
}

}  // namespace
}  // namespace lamina::apps_test

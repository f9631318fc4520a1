// The CPU forward pass (libmodel) against llama.cpp's reference logits, the
// float64 reference path, and itself (batch and thread invariance).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lamina/model/forward.h"
#include "lamina/model/model.h"
#include "reference_forward.h"

namespace lamina::model {
namespace {

namespace fs = std::filesystem;
const fs::path kData = LAMINA_TESTDATA_DIR;

std::vector<float> read_f32(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> v(fs::file_size(path) / sizeof(float));
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Logits of every position of `ids`, run as one batch from position 0.
std::vector<float> prompt_logits(CpuForward& fwd, const std::vector<int32_t>& ids, uint32_t seq = 0) {
  std::vector<TokenInput> batch;
  for (std::size_t i = 0; i < ids.size(); ++i) batch.push_back({ids[i], static_cast<uint32_t>(i), seq, true});
  const auto logits = fwd.decode(batch);
  return {logits.begin(), logits.end()};
}

std::vector<int32_t> greedy(CpuForward& fwd, const std::vector<int32_t>& prompt, int n, uint32_t n_vocab) {
  std::vector<TokenInput> batch;
  for (std::size_t i = 0; i < prompt.size(); ++i)
    batch.push_back({prompt[i], static_cast<uint32_t>(i), 0, i + 1 == prompt.size()});
  auto logits = fwd.decode(batch);
  std::vector<int32_t> out;
  for (int s = 0; s < n; ++s) {
    const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(next);
    const TokenInput t{next, static_cast<uint32_t>(prompt.size() + out.size() - 1), 0, true};
    logits = fwd.decode(std::span(&t, 1));
    EXPECT_EQ(logits.size(), n_vocab);
  }
  return out;
}

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0.0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

class ArchModel : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!fs::is_directory(kData / "archs")) GTEST_SKIP() << "test data not found at " << kData;
  }
  fs::path path(const std::string& suffix) const { return kData / "archs" / (GetParam() + suffix); }
};

// The forward pass quantizes activations as llama.cpp's CPU backend does, so
// it should track the float64 reference run with the same rounding: the only
// difference left is f32 against f64 arithmetic. Logits here are O(10); an
// f32 pass over a few layers of width <= 1024 stays within 2e-4 of f64 unless
// an activation lands on a rounding boundary of the Q8 quantizer, which the
// mean check below tolerates but the per-row max would not.
TEST_P(ArchModel, MatchesReferenceAndLlamaCpp) {
  const auto model = Model::load(path(".gguf"));
  const auto ref = read_json(path(".reference.json"));
  const auto& c = ref["cases"][0];
  const std::vector<int32_t> prompt = c["prompt_ids"];
  const std::vector<int32_t> generated = c["generated_ids"];
  const uint32_t n_vocab = model->config().n_vocab;

  CpuForward fwd(*model, {.n_ctx = 64, .n_threads = 2});
  std::vector<int32_t> teacher = prompt;
  teacher.insert(teacher.end(), generated.begin(), generated.end() - 1);
  const auto ours = prompt_logits(fwd, teacher);

  // Against the float64 oracle with the same activation rounding.
  const auto gguf = gguf::GgufFile::open(path(".gguf"));
  const auto oracle = reference::reference_logits(gguf, teacher, {.emulate_ggml_activation_quant = true});
  std::size_t rows_off = 0;
  for (std::size_t r = 0; r < teacher.size(); ++r) {
    const auto d = max_abs_diff(std::span(ours).subspan(r * n_vocab, n_vocab),
                                std::span(oracle).subspan(r * n_vocab, n_vocab));
    if (d > 2e-4) ++rows_off;
  }
  // A rounding-boundary flip moves one row at most; more means a real bug.
  EXPECT_LE(rows_off, 1u) << "rows differing from the f64 reference by more than 2e-4";

  // Against llama.cpp: prompt rows, and the same greedy continuation.
  const auto ref_logits = read_f32(path(".public.logits.f32"));
  ASSERT_EQ(ref_logits.size(), prompt.size() * n_vocab);
  const double stated = c["crosscheck"]["f64_emulating_ggml"]["prompt"]["max_abs_diff"].get<double>();
  const double prompt_diff = max_abs_diff(std::span(ours).first(prompt.size() * n_vocab), ref_logits);
  // Exact GELU (gpt2, gemma2) differs from llama.cpp's f16 GELU table by up to
  // 4.5e-3 in these logits (archs/README.md); elsewhere the oracle's stated
  // agreement plus our f32 margin.
  const bool gelu = GetParam().rfind("gpt2", 0) == 0 || GetParam().rfind("gemma2", 0) == 0;
  const double limit = gelu ? 1e-2 : std::max(2 * stated, 2e-4);
  EXPECT_LE(prompt_diff, limit) << "prompt logits vs llama.cpp";

  CpuForward fresh(*model, {.n_ctx = 64, .n_threads = 2});
  EXPECT_EQ(greedy(fresh, prompt, static_cast<int>(generated.size()), n_vocab), generated)
      << "greedy continuation differs from llama.cpp";
}

std::vector<std::string> arch_models() {
  std::vector<std::string> names;
  for (const char* arch : {"llama", "llama3", "qwen2", "qwen3", "qwen3moe", "phi3", "gpt2", "gemma2"})
    for (const char* prec : {"f32", "q8_0", "q4_k_m"}) names.push_back(std::string(arch) + "." + prec);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Archs, ArchModel, ::testing::ValuesIn(arch_models()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n) ch = ch == '.' ? '_' : ch;
                           return n;
                         });

// A sequence's logits are bit-identical however it is batched: all at once,
// one token at a time, interleaved with another sequence, in small chunks,
// and on 1 or 2 threads.
TEST(ForwardInvariance, BatchingAndThreadsDoNotChangeLogits) {
  const fs::path file = kData / "archs" / "qwen2.q4_k_m.gguf";
  if (!fs::exists(file)) GTEST_SKIP() << "test data not found at " << kData;
  const auto model = Model::load(file);
  const std::vector<int32_t> a{1, 400, 37, 255, 88, 300, 12, 401, 5, 77};
  const std::vector<int32_t> b{1, 9, 99, 199, 299};
  const uint32_t V = model->config().n_vocab;

  CpuForward whole(*model, {.n_ctx = 32, .n_threads = 2});
  const auto expected = prompt_logits(whole, a);

  CpuForward single(*model, {.n_ctx = 32, .n_threads = 1});
  std::vector<float> one_by_one;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const TokenInput t{a[i], static_cast<uint32_t>(i), 0, true};
    const auto l = single.decode(std::span(&t, 1));
    one_by_one.insert(one_by_one.end(), l.begin(), l.end());
  }
  EXPECT_EQ(one_by_one, expected) << "token by token on 1 thread";

  CpuForward mixed(*model, {.n_ctx = 32, .n_seq = 2, .max_batch = 3, .n_threads = 2});
  std::vector<TokenInput> batch;
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i < b.size()) batch.push_back({b[i], static_cast<uint32_t>(i), 1, true});
    if (i < a.size()) batch.push_back({a[i], static_cast<uint32_t>(i), 0, true});
  }
  const auto l = mixed.decode(batch);
  std::vector<float> seq_a;
  std::size_t row = 0;
  for (const auto& t : batch) {
    if (t.seq == 0) seq_a.insert(seq_a.end(), l.begin() + row * V, l.begin() + (row + 1) * V);
    ++row;
  }
  EXPECT_EQ(seq_a, expected) << "interleaved with another sequence, chunks of 3";
}

TEST(ForwardErrors, RejectsBadInput) {
  const fs::path file = kData / "models" / "stories260K.gguf";
  if (!fs::exists(file)) GTEST_SKIP() << "test data not found at " << kData;
  const auto model = Model::load(file);
  CpuForward fwd(*model, {.n_ctx = 8});
  const TokenInput bad_token{100000, 0, 0, true};
  EXPECT_THROW(fwd.decode(std::span(&bad_token, 1)), ModelError);
  const TokenInput bad_pos{1, 8, 0, true};
  EXPECT_THROW(fwd.decode(std::span(&bad_pos, 1)), ModelError);
  const TokenInput bad_seq{1, 0, 1, true};
  EXPECT_THROW(fwd.decode(std::span(&bad_seq, 1)), ModelError);
}

}  // namespace
}  // namespace lamina::model

// Proves the float64 reference forward pass right, so that it can serve as
// the oracle for the fast paths:
//  - archs/: the architectures in each precision shipped, against llama.cpp's logits,
//    once with exact math and once emulating ggml's numerics, each compared
//    with what an independent float64 implementation measured against the
//    same logits (the `crosscheck` block of each reference JSON, also the
//    cross-check table of archs/README.md);
//  - stories260K: logits of positions 0..7 and 200 greedy tokens from BOS;
//  - TinyStories-656K-Q8_0: logits of the first generated step and the
//    greedy continuations of both prompts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "lamina/gguf/file.h"
#include "reference_forward.h"
#include "reference_model.h"

namespace lamina::model::reference {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

fs::path testdata(const std::string& relative) { return fs::path(LAMINA_TESTDATA_DIR) / relative; }

#define SKIP_IF_MISSING(path)                                                 \
  if (!fs::exists(path)) GTEST_SKIP() << "test data not found: " << (path)

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::vector<float> read_f32(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

size_t argmax(std::span<const float> row) {
  return static_cast<size_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

std::vector<double> log_softmax(std::span<const float> row) {
  const double max = *std::max_element(row.begin(), row.end());
  double sum = 0.0;
  for (float v : row) sum += std::exp(v - max);
  const double log_sum = std::log(sum) + max;
  std::vector<double> out;
  for (float v : row) out.push_back(v - log_sum);
  return out;
}

// How far `ours` is from `theirs` (llama.cpp), measured as the reference
// JSON's crosscheck block measures it: KL is KL(theirs || ours) per row.
struct Deviation {
  double max_abs = 0.0;
  double median_abs = 0.0;
  double mean_kl = 0.0;
  size_t argmax_agree = 0;
  size_t rows = 0;
};

Deviation deviation(std::span<const float> ours, std::span<const float> theirs, size_t n_vocab) {
  Deviation d;
  d.rows = theirs.size() / n_vocab;
  std::vector<double> abs_diffs;
  for (size_t r = 0; r < d.rows; ++r) {
    const auto a = ours.subspan(r * n_vocab, n_vocab);
    const auto b = theirs.subspan(r * n_vocab, n_vocab);
    for (size_t i = 0; i < n_vocab; ++i) abs_diffs.push_back(std::fabs(double{a[i]} - double{b[i]}));
    const auto la = log_softmax(a);
    const auto lb = log_softmax(b);
    double kl = 0.0;
    for (size_t i = 0; i < n_vocab; ++i) kl += std::exp(lb[i]) * (lb[i] - la[i]);
    d.mean_kl += kl / static_cast<double>(d.rows);
    if (argmax(a) == argmax(b)) ++d.argmax_agree;
  }
  std::sort(abs_diffs.begin(), abs_diffs.end());
  d.max_abs = abs_diffs.back();
  d.median_abs = abs_diffs[abs_diffs.size() / 2];
  return d;
}

// Our logits are returned as f32, which moves each by up to half an ulp
// (< 1e-6 for |logit| < 32). KL is about half the variance of the logit
// differences, so that rounding alone can add up to 0.5 * (1e-6)^2 = 5e-13
// per row: the size of some stated KLs of the emulated runs.
constexpr double kF32LogitKlFloor = 5e-13;

// "8/8" -> 8
size_t agree_count(const json& stats) {
  const std::string s = stats.at("argmax_agree").get<std::string>();
  return std::stoul(s.substr(0, s.find('/')));
}

// Our deviation from llama.cpp must be what the independent float64
// implementation saw, within a factor 2: both are exact float64 passes over
// the same weights (with the same emulation switched on or off), so they
// differ from each other by far less than either differs from llama.cpp, and
// the factor covers only how the two sum in different orders. With exact
// math the deviation is llama.cpp's own f32 rounding (about 1e-5 for f32
// models), or, for quantized weights, llama.cpp's activation quantization
// (up to about 1). Emulating it brings most positions to 1e-6; an activation
// that lands on a rounding boundary in one implementation and not the other
// can still move a logit by up to ~0.5, which is what the stated maxima of
// some quantized models show. The argmax must agree at least as often as
// it did for the independent implementation (32/32 where it did).
void expect_like_crosscheck(const Deviation& ours, const json& stated, const std::string& what) {
  SCOPED_TRACE(what);
  const double max_abs = stated.at("max_abs_diff").get<double>();
  const double mean_kl = stated.at("mean_kl").get<double>();
  EXPECT_LE(ours.max_abs, 2.0 * max_abs);
  EXPECT_LE(ours.mean_kl, std::max(2.0 * mean_kl, kF32LogitKlFloor));
  EXPECT_GE(ours.argmax_agree, agree_count(stated));
  std::printf("  %-28s max abs %.2e (stated %.2e)  median %.1e  mean KL %.1e (stated %.1e)  argmax %zu/%zu\n",
              what.c_str(), ours.max_abs, max_abs, ours.median_abs, ours.mean_kl, mean_kl,
              ours.argmax_agree, ours.rows);
}

// ---------------------------------------------------------------------------
// archs/: tiny random-weight models against llama.cpp.

class ArchModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void check(bool emulate_ggml) {
    const std::string m = GetParam();
    const fs::path json_path = testdata("archs/" + m + ".reference.json");
    SKIP_IF_MISSING(json_path);
    const json ref = read_json(json_path);
    const size_t n_vocab = ref.at("n_vocab").get<size_t>();
    const auto file = gguf::GgufFile::open(testdata("archs/" + ref.at("model_file").get<std::string>()));
    // The later archs state no float64 cross-check emulating ggml. For
    // gemma3.f32 (f32 weights: no activation is quantized, so the GELU table
    // is all ggml adds) the README states its bound for a pass with the f16
    // GELU table, measured by a pass that is not float64 throughout, so the
    // statistics of the cross-check do not carry over: that bound is used.
    const json& stated = ref.at("cases").at(0).at("crosscheck");
    if (emulate_ggml && !stated.contains("f64_emulating_ggml")) {
      if (!GetParam().ends_with(".f32") || !stated.contains("f64_gelu_f16_table"))
        GTEST_SKIP() << "the reference states no cross-check emulating ggml";
      for (const json& c : ref.at("cases")) check_case(file, c, n_vocab, true, nullptr);
      return;
    }
    const char* key = emulate_ggml ? "f64_emulating_ggml" : "exact_f64";
    for (const json& c : ref.at("cases")) check_case(file, c, n_vocab, emulate_ggml, key);
  }

  void check_case(const gguf::GgufFile& file, const json& c, size_t n_vocab, bool emulate_ggml, const char* key) {
    const std::string m = GetParam() + " " + c.value("prompt_name", std::string("public"));
    const auto prompt = c.at("prompt_ids").get<std::vector<int32_t>>();
    const auto generated = c.at("generated_ids").get<std::vector<int32_t>>();
    const auto prompt_logits = read_f32(testdata("archs/" + c.at("logits_file").get<std::string>()));
    const auto gen_logits = read_f32(testdata("archs/" + c.at("gen_logits_file").get<std::string>()));
    ASSERT_EQ(prompt_logits.size(), prompt.size() * n_vocab);
    ASSERT_EQ(gen_logits.size(), generated.size() * n_vocab);

    // Teacher forcing: the prompt and every generated token but the last.
    // Row p holds the logits after token p, so rows 0..n-1 are the prompt's
    // and rows n-1.. those the generated tokens were chosen from.
    std::vector<int32_t> tokens = prompt;
    tokens.insert(tokens.end(), generated.begin(), generated.end() - 1);
    const ReferenceOptions options{.emulate_ggml_activation_quant = emulate_ggml,
                                   .emulate_ggml_gelu_f16 = emulate_ggml};
    const std::vector<float> logits = reference_logits(file, tokens, options);
    ASSERT_EQ(logits.size(), tokens.size() * n_vocab);

    const std::span<const float> all(logits);
    const auto ours_prompt = all.first(prompt.size() * n_vocab);
    const auto ours_gen = all.subspan((prompt.size() - 1) * n_vocab, generated.size() * n_vocab);
    std::printf("%s (%s)\n", m.c_str(), emulate_ggml ? "emulating ggml" : "exact f64");
    if (key == nullptr) {
      // archs/README.md, tolerances for the added archs: gemma3 f32 with the
      // f16 GELU table within 5e-3, and every greedy choice the same.
      for (const auto& [what, d] : {std::pair{"prompt", deviation(ours_prompt, prompt_logits, n_vocab)},
                                    std::pair{"generation", deviation(ours_gen, gen_logits, n_vocab)}}) {
        EXPECT_LE(d.max_abs, 5e-3) << m << " " << what;
        EXPECT_EQ(d.argmax_agree, d.rows) << m << " " << what;
        std::printf("  %-28s max abs %.2e  argmax %zu/%zu\n", what, d.max_abs, d.argmax_agree, d.rows);
      }
      return;
    }
    const json& stated = c.at("crosscheck").at(key);
    expect_like_crosscheck(deviation(ours_prompt, prompt_logits, n_vocab), stated.at("prompt"), m + " prompt");
    expect_like_crosscheck(deviation(ours_gen, gen_logits, n_vocab), stated.at("generation_teacher_forced"),
                           m + " generation (teacher-forced)");
  }
};

TEST_P(ArchModelTest, ExactMathMatchesIndependentCrosscheck) { check(false); }
TEST_P(ArchModelTest, GgmlEmulationMatchesIndependentCrosscheck) { check(true); }

std::vector<std::string> arch_models() {
  std::vector<std::string> out;
  for (const char* arch : {"llama", "llama3", "qwen2", "qwen3", "phi3", "gpt2", "gemma2", "qwen3moe"}) {
    for (const char* precision : {"f32", "q8_0", "q4_k_m"}) out.push_back(std::string(arch) + "." + precision);
  }
  // Added later, with the precisions archs/README.md ships for them.
  for (const char* model :
       {"mixtral.f32", "mixtral.q4_k_m", "gemma3.f32", "gemma3.q4_k_m", "deepseek2.f32", "deepseek2.q4_k_m"})
    out.push_back(model);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Archs, ArchModelTest, ::testing::ValuesIn(arch_models()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

// ---------------------------------------------------------------------------
// models/: two small trained llama models.

TEST(Stories260K, LogitsAndGreedyIdsMatchDerivedReference) {
  const fs::path json_path = testdata("models/stories260K.reference.derived.json");
  SKIP_IF_MISSING(json_path);
  const json ref = read_json(json_path);
  const auto greedy_ids = ref.at("greedy_ids").get<std::vector<int32_t>>();
  ASSERT_EQ(greedy_ids.size(), 201u);
  const auto file = gguf::GgufFile::open(testdata("models/stories260K.gguf"));
  ReferenceSession session(file, ReferenceOptions{});

  // Greedy from a lone BOS, 200 forward passes; logits[p] follow token p.
  std::vector<int32_t> ids = {greedy_ids[0]};
  double max_abs = 0.0;
  for (size_t p = 0; p < 200; ++p) {
    const std::vector<float> logits = session.append(ids.back());
    if (p < ref.at("logits").size()) {
      const json& want = ref.at("logits").at(p);
      ASSERT_EQ(want.at("input_id").get<int32_t>(), ids.back());
      const auto expected = want.at("logits").get<std::vector<double>>();
      ASSERT_EQ(expected.size(), logits.size());
      for (size_t i = 0; i < logits.size(); ++i) max_abs = std::max(max_abs, std::fabs(logits[i] - expected[i]));
    }
    ids.push_back(static_cast<int32_t>(argmax(logits)));
  }
  // Both are float64 passes: the JSON keeps 6 decimals (error <= 5e-7) and we
  // return f32 logits (|logit| < 32: error <= 9.5e-7), 1.45e-6 at most.
  EXPECT_LE(max_abs, 2e-6);
  EXPECT_EQ(ids, greedy_ids);
  std::printf("stories260K: positions 0..7 max abs %.2e, greedy ids %s\n", max_abs,
              ids == greedy_ids ? "equal" : "differ");
}

// Exact math only: with ggml's Q8_0 activation quantization emulated (which
// matches llama.cpp's x86 CPU backend to 1e-6 on archs/llama*.q8_0), the
// "Hello" case flips at generated token 13 (exact margin 0.008, 'fly' over
// 's'), so the origin's expected text was evidently produced without that
// quantization, and only exact math is known to reproduce it.
TEST(TinyStories656K, FirstStepLogitsAndGreedyIdsMatchDerivedReference) {
  const fs::path json_path = testdata("models/TinyStories-656K-Q8_0.reference.derived.json");
  SKIP_IF_MISSING(json_path);
  const json ref = read_json(json_path);
  const auto file = gguf::GgufFile::open(testdata("models/TinyStories-656K-Q8_0.gguf"));
  for (const json& c : ref.at("cases")) {
    const std::string prompt_text = c.at("prompt").get<std::string>();
    SCOPED_TRACE(prompt_text);
    const auto prompt = c.at("prompt_ids_with_bos").get<std::vector<int32_t>>();
    const auto expected_ids = c.at("greedy_generated_ids").get<std::vector<int32_t>>();
    const auto expected_logits = c.at("logits_first_generated_step").get<std::vector<double>>();

    ReferenceSession session(file, ReferenceOptions{});
    std::vector<float> logits;
    for (int32_t token : prompt) logits = session.append(token);
    ASSERT_EQ(logits.size(), expected_logits.size());
    double max_abs = 0.0;
    for (size_t i = 0; i < logits.size(); ++i) {
      max_abs = std::max(max_abs, std::fabs(logits[i] - expected_logits[i]));
    }
    // Both are float64 passes: the JSON keeps 5 decimals (error <= 5e-6) and
    // we return f32 logits (|logit| < 32: error <= 9.5e-7), 6e-6 at most.
    EXPECT_LE(max_abs, 1e-5);

    std::vector<int32_t> ids;
    while (true) {
      ids.push_back(static_cast<int32_t>(argmax(logits)));
      if (ids.size() == expected_ids.size()) break;
      logits = session.append(ids.back());
    }
    // The smallest top-2 gap of these runs (0.008) is far above our error.
    EXPECT_EQ(ids, expected_ids);
    std::printf("TinyStories-656K '%s': first-step max abs %.2e, greedy ids %s\n", prompt_text.c_str(),
                max_abs, ids == expected_ids ? "equal" : "differ");
  }
}

TEST(ReferenceModel, RejectsUnknownArchitecture) {
  EXPECT_THROW(arch_traits("mamba"), std::runtime_error);
  EXPECT_EQ(arch_traits("qwen3moe").ffn, FfnKind::MixtureOfExperts);
}

}  // namespace
}  // namespace lamina::model::reference

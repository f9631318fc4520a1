// Samples of one prompt sharing its prefill (the KV positions copied from the
// slot that computed them) and logit_bias through the engine: each request's
// tokens and log-probabilities equal those of the same request run alone.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "engine_test_util.h"

namespace lamina::model::engine_test {
namespace {

struct RequestRun {
  CompletionResult result;
  std::vector<TokenEvent> events;
};

// All submitted at once to one engine with `n_slots` slots.
std::vector<RequestRun> run_together(const Model& model, uint32_t n_slots, const EngineOptions& options,
                              const std::vector<CompletionRequest>& requests) {
  std::vector<std::unique_ptr<Collector>> collectors;
  CpuForward forward(model, forward_options(n_slots));
  Engine engine(model, forward, options);
  for (const CompletionRequest& r : requests) {
    collectors.push_back(std::make_unique<Collector>());
    EXPECT_NE(engine.submit(r, collectors.back()->callbacks()), 0u);
  }
  std::vector<RequestRun> runs;
  for (auto& c : collectors) runs.push_back({c->wait(), c->events()});
  return runs;
}

void expect_same_events(const std::vector<TokenEvent>& a, const std::vector<TokenEvent>& b, std::size_t index) {
  ASSERT_EQ(a.size(), b.size()) << "sample " << index;
  for (std::size_t t = 0; t < a.size(); ++t) {
    EXPECT_EQ(a[t].id, b[t].id) << "sample " << index << " token " << t;
    // Bit-identical, not close: the copied positions are the computed ones.
    EXPECT_EQ(a[t].chosen.logprob, b[t].chosen.logprob) << "sample " << index << " token " << t;
    ASSERT_EQ(a[t].top.size(), b[t].top.size());
    for (std::size_t k = 0; k < a[t].top.size(); ++k) {
      EXPECT_EQ(a[t].top[k].id, b[t].top[k].id);
      EXPECT_EQ(a[t].top[k].logprob, b[t].top[k].logprob);
    }
  }
}

TEST(EngineSharing, SamplesOfOnePromptCopyItsPrefillAndEqualSingleRuns) {
  LAMINA_REQUIRE_MODEL();
  EngineOptions options;
  options.prefix_cache = false;  // only the sharing between running requests may skip work
  options.prefill_chunk = 8;     // the prompt takes several steps: the others wait, then copy
  std::vector<CompletionRequest> samples;
  for (uint64_t i = 0; i < 3; ++i) {
    CompletionRequest r = sampled_request(model, "Once upon a time, a little girl named Lily went to the park and", 12,
                                          1234 + i);
    r.top_logprobs = 3;
    r.stop_at_eog = false;
    samples.push_back(r);
  }
  const std::vector<RequestRun> together = run_together(model, 3, options, samples);
  const uint32_t prompt = static_cast<uint32_t>(samples[0].prompt_ids.size());
  ASSERT_GT(prompt, 9u);
  EXPECT_EQ(together[0].result.cached_prompt_tokens, 0u);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (i > 0) {
      EXPECT_EQ(together[i].result.cached_prompt_tokens, prompt - 1) << "sample " << i;
    }
    const std::vector<RequestRun> alone = run_together(model, 1, options, {samples[i]});
    EXPECT_EQ(together[i].result.generated_ids, alone[0].result.generated_ids) << "sample " << i;
    expect_same_events(together[i].events, alone[0].events, i);
  }
  EXPECT_NE(together[0].result.generated_ids, together[1].result.generated_ids) << "seeds differ, so do samples";
}

TEST(EngineSharing, APartlySharedPromptCopiesOnlyTheCommonPart) {
  LAMINA_REQUIRE_MODEL();
  EngineOptions options;
  options.prefix_cache = false;
  CompletionRequest a = greedy_request(model, "Once upon a time, there was a big red ball", 6);
  CompletionRequest b = greedy_request(model, "Once upon a time, there was a small dog", 6);
  const std::size_t common = [&] {
    std::size_t n = 0;
    while (a.prompt_ids[n] == b.prompt_ids[n]) ++n;
    return n;
  }();
  const std::vector<RequestRun> together = run_together(model, 2, options, {a, b});
  EXPECT_EQ(together[1].result.cached_prompt_tokens, common);
  EXPECT_EQ(together[1].result.generated_ids, run_together(model, 1, options, {b})[0].result.generated_ids);
}

TEST(EngineLogitBias, PlusHundredForcesAndMinusHundredForbids) {
  LAMINA_REQUIRE_MODEL();
  const CompletionRequest plain = greedy_request(model, "Once upon a time", 8);
  const std::vector<RequestRun> base = run_together(model, 1, {}, {plain});
  ASSERT_FALSE(base[0].result.generated_ids.empty());

  CompletionRequest forced = plain;
  forced.stop_at_eog = false;
  forced.sampling.logit_bias = {{42, 100.0f}};
  for (const float temperature : {0.0f, 1.0f}) {
    forced.sampling.temperature = temperature;
    EXPECT_EQ(run_together(model, 1, {}, {forced})[0].result.generated_ids, std::vector<int32_t>(8, 42));
  }

  CompletionRequest forbidden = plain;
  const int32_t first = base[0].result.generated_ids[0];
  forbidden.sampling.logit_bias = {{first, -100.0f}};
  forbidden.top_logprobs = 1;
  const std::vector<RequestRun> banned = run_together(model, 1, {}, {forbidden});
  ASSERT_FALSE(banned[0].result.generated_ids.empty());
  for (const int32_t id : banned[0].result.generated_ids) EXPECT_NE(id, first);
  // The log-probabilities are those of the biased row the sampler saw.
  EXPECT_LT(banned[0].events[0].top[0].id, static_cast<int32_t>(model.config().n_vocab));
  EXPECT_NE(banned[0].events[0].top[0].id, first);
}

TEST(EngineLogitBias, BadBiasesAreRefused) {
  LAMINA_REQUIRE_MODEL();
  CpuForward forward(model, forward_options(1));
  Engine engine(model, forward, {});
  CompletionRequest r = greedy_request(model, "Once", 2);
  r.sampling.logit_bias = {{static_cast<int32_t>(model.config().n_vocab), 1.0f}};
  EXPECT_THROW(engine.submit(r, {}), std::invalid_argument);
  r.sampling.logit_bias = {{1, 100.5f}};
  EXPECT_THROW(engine.submit(r, {}), std::invalid_argument);
  r.sampling.logit_bias = {{1, std::nanf("")}};
  EXPECT_THROW(engine.submit(r, {}), std::invalid_argument);
}

}  // namespace
}  // namespace lamina::model::engine_test

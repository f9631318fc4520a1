// The engine on a block-paged KV cache: a prompt prefix computed once
// serves later and concurrent requests (bit-identical to computing it), the
// blocks in use stay within what the sharing promises, and requests that do
// not fit the pool wait for it.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "engine_test_util.h"

namespace lamina::model::engine_test {
namespace {

constexpr uint32_t kPrefix = 300;  // one whole block of 256 and 44 positions of the next

// kPrefix tokens of story text (BOS first).
std::vector<int32_t> shared_prefix(const Model& model) {
  std::string text;
  while (model.tokenizer().encode(text, true, false).size() < kPrefix)
    text += "Once upon a time, there was a little girl named Lily. She loved to play in the park with her dog. ";
  std::vector<int32_t> ids = model.tokenizer().encode(text, true, false);
  ids.resize(kPrefix);
  return ids;
}

CompletionRequest with_suffix(const Model& model, const std::vector<int32_t>& prefix, const std::string& suffix,
                              int32_t max_tokens) {
  CompletionRequest r;
  r.prompt_ids = prefix;
  for (int32_t id : model.tokenizer().encode(suffix, false, false)) r.prompt_ids.push_back(id);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.0f;
  r.stop_at_eog = false;
  r.top_logprobs = 2;
  return r;
}

ForwardOptions paged(uint32_t n_seq, uint32_t n_ctx, uint32_t kv_blocks) {
  ForwardOptions o = forward_options(n_seq, n_ctx);
  o.kv_blocks = kv_blocks;
  return o;
}

struct RequestRun {
  CompletionResult result;
  std::vector<TokenEvent> events;
};

RequestRun run_alone(const Model& model, const CompletionRequest& request, uint32_t n_ctx) {
  CpuForward forward(model, forward_options(1, n_ctx));
  Engine engine(model, forward, {});
  Collector c;
  EXPECT_NE(engine.submit(request, c.callbacks()), 0u);
  return {c.wait(), c.events()};
}

void expect_same(const RequestRun& a, const RequestRun& b, std::size_t index) {
  EXPECT_EQ(a.result.generated_ids, b.result.generated_ids) << "request " << index;
  ASSERT_EQ(a.events.size(), b.events.size()) << "request " << index;
  for (std::size_t t = 0; t < a.events.size(); ++t) {
    // Bit-identical: a reused position holds what computing it gives.
    EXPECT_EQ(a.events[t].chosen.logprob, b.events[t].chosen.logprob) << "request " << index << " token " << t;
    ASSERT_EQ(a.events[t].top.size(), b.events[t].top.size());
    for (std::size_t k = 0; k < a.events[t].top.size(); ++k)
      EXPECT_EQ(a.events[t].top[k].logprob, b.events[t].top[k].logprob) << "request " << index << " token " << t;
  }
}

TEST(EnginePaged, ASecondRequestComputesOnlyWhatFollowsTheSharedPrefix) {
  LAMINA_REQUIRE_MODEL();
  const std::vector<int32_t> prefix = shared_prefix(model);
  const CompletionRequest first = with_suffix(model, prefix, "The sun was hot", 6);
  const CompletionRequest second = with_suffix(model, prefix, "A big dog ran", 6);
  ASSERT_NE(first.prompt_ids[kPrefix], second.prompt_ids[kPrefix]) << "the prompts part right after the prefix";

  CpuForward forward(model, forward_options(2, 512));
  Engine engine(model, forward, {});
  Collector c1, c2;
  ASSERT_NE(engine.submit(first, c1.callbacks()), 0u);
  EXPECT_EQ(c1.wait().cached_prompt_tokens, 0u);
  ASSERT_NE(engine.submit(second, c2.callbacks()), 0u);
  const RequestRun warm{c2.wait(), c2.events()};
  EXPECT_EQ(warm.result.cached_prompt_tokens, kPrefix) << "a whole block shared, 44 positions copied";
  EXPECT_EQ(engine.stats().cached_prompt_tokens_total, kPrefix);
  expect_same(warm, run_alone(model, second, 512), 1);
}

TEST(EnginePaged, SixtyFourSequencesWithASharedPrefixHoldItOnce) {
  LAMINA_REQUIRE_MODEL();
  constexpr uint32_t kSeqs = 64;
  const std::vector<int32_t> prefix = shared_prefix(model);
  std::vector<CompletionRequest> requests;
  for (uint32_t i = 0; i < kSeqs; ++i) {
    CompletionRequest r = with_suffix(model, prefix, "", 4);
    r.prompt_ids.push_back(static_cast<int32_t>(10 + i));  // a distinct last token each
    r.top_logprobs = -1;
    requests.push_back(r);
  }
  // Each needs at most 305 positions, two blocks: the prefix's whole block,
  // shared, and one of its own. The bound: 1 + 64 blocks.
  const uint32_t bound = 1 + kSeqs;
  CpuForward forward(model, paged(kSeqs, 512, bound + 2));
  EngineOptions options;
  options.max_step_tokens = 1024;
  Engine engine(model, forward, options);
  std::vector<std::unique_ptr<Collector>> collectors;
  for (const CompletionRequest& r : requests) {
    collectors.push_back(std::make_unique<Collector>());
    ASSERT_NE(engine.submit(r, collectors.back()->callbacks()), 0u);
  }
  uint64_t cached = 0;
  for (auto& c : collectors) cached += c->wait().cached_prompt_tokens;
  const EngineStats stats = engine.stats();
  EXPECT_EQ(stats.kv_blocks_total, bound + 2);
  EXPECT_LE(stats.kv_blocks_peak, bound);
  EXPECT_EQ(stats.kv_blocks_in_use, 0u);
  EXPECT_EQ(cached, uint64_t{kSeqs - 1} * kPrefix) << "only the first computed the prefix";
  // A few solo runs (each a fresh engine) suffice to pin the results down.
  for (const uint32_t i : {0u, 1u, 37u, kSeqs - 1}) {
    const RequestRun alone = run_alone(model, requests[i], 512);
    EXPECT_EQ(collectors[i]->wait().generated_ids, alone.result.generated_ids) << "request " << i;
  }
}

TEST(EnginePaged, RequestsThatDoNotFitThePoolWaitAndFinishAlike) {
  LAMINA_REQUIRE_MODEL();
  // Three blocks; each request may need two (a short prompt and 300 tokens).
  std::vector<CompletionRequest> requests;
  for (const char* text : {"Once upon a time", "The cat sat", "A little boy", "Lily and Ben"}) {
    CompletionRequest r = greedy_request(model, text, 300);
    r.stop_at_eog = false;
    requests.push_back(r);
  }
  CpuForward forward(model, paged(4, 512, 3));
  Engine engine(model, forward, {});
  std::vector<std::unique_ptr<Collector>> collectors;
  for (const CompletionRequest& r : requests) {
    collectors.push_back(std::make_unique<Collector>());
    ASSERT_NE(engine.submit(r, collectors.back()->callbacks()), 0u);
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const CompletionResult& r = collectors[i]->wait();
    EXPECT_EQ(r.finish, FinishReason::Length) << "request " << i;
    EXPECT_EQ(r.generated_ids, run_alone(model, requests[i], 512).result.generated_ids) << "request " << i;
  }
  EXPECT_LE(engine.stats().kv_blocks_peak, 3u);

  // Four blocks' worth (the whole context of 1024) can never fit a pool of
  // three: refused at once, naming the sizes.
  CompletionRequest huge = greedy_request(model, "Once", -1);
  CpuForward small(model, paged(1, 1024, 3));
  Engine tight(model, small, {});
  try {
    tight.submit(huge, {});
    ADD_FAILURE() << "a request needing 4 blocks of a pool of 3 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("4 blocks"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("holds 3 blocks"), std::string::npos) << e.what();
  }
}

TEST(EnginePaged, WithoutThePrefixCacheNothingIsReusedAcrossRequests) {
  LAMINA_REQUIRE_MODEL();
  const std::vector<int32_t> prefix = shared_prefix(model);
  const CompletionRequest request = with_suffix(model, prefix, " The end", 3);
  CpuForward forward(model, forward_options(1, 512));
  EngineOptions options;
  options.prefix_cache = false;
  Engine engine(model, forward, options);
  for (int i = 0; i < 2; ++i) {
    Collector c;
    ASSERT_NE(engine.submit(request, c.callbacks()), 0u);
    EXPECT_EQ(c.wait().cached_prompt_tokens, 0u);
  }
  EXPECT_EQ(engine.stats().kv_blocks_cached, 0u);
}

}  // namespace
}  // namespace lamina::model::engine_test

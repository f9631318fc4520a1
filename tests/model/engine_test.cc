// The serving engine's results: a request's tokens, text and log-probabilities
// do not depend on the requests beside it, on how its prompt is split into
// chunks, or on the prefix cache; they equal the plain generation loop's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine_test_util.h"
#include "lamina/model/generate.h"
#include "lamina/model/sampler.h"

namespace lamina::model::engine_test {
namespace {

const char* const kPrompts[] = {
    "Once upon a time",
    "Once upon a time, there was a little girl named Lily. She",
    "The little dog",
    "Tom and Sue went to the park. They saw a big tree and",
    "One day, a bird",
    "Once upon a time, there was a big bear who liked honey. Every day he went to the forest to find",
    "Lily",
    "The sun was hot. Ben wanted to play with his ball, but his mom said",
};

// Thirty-two requests of different prompts, lengths and sampling settings.
std::vector<CompletionRequest> mixed_requests(const Model& model) {
  std::vector<CompletionRequest> requests;
  for (int i = 0; i < 32; ++i) {
    const std::string prompt = kPrompts[i % 8];
    const int32_t max_tokens = 12 + (i * 7) % 48;
    CompletionRequest r = i % 4 == 0 ? greedy_request(model, prompt, max_tokens)
                                     : sampled_request(model, prompt, max_tokens, 1000 + static_cast<uint64_t>(i));
    if (i % 4 == 2) {
      r.sampling.repeat_penalty = 1.3f;
      r.sampling.presence_penalty = 0.2f;
      r.sampling.frequency_penalty = 0.1f;
    }
    if (i % 4 == 3) r.stop = {" the", "\n"};
    if (i % 3 == 0) r.top_logprobs = 2;
    if (i % 5 == 0) r.stop_at_eog = false;
    requests.push_back(std::move(r));
  }
  return requests;
}

void expect_same(const std::vector<CompletionResult>& a, const std::vector<CompletionResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].generated_ids, b[i].generated_ids) << "request " << i;
    EXPECT_EQ(a[i].text, b[i].text) << "request " << i;
    EXPECT_EQ(a[i].finish, b[i].finish) << "request " << i;
  }
}

GenerateOptions as_generate_options(const CompletionRequest& r) {
  GenerateOptions o;
  o.n_predict = r.max_tokens;
  o.sampling = r.sampling;
  o.stop = r.stop;
  o.stop_at_eog = r.stop_at_eog;
  return o;
}

TEST(Engine, RequestsDoNotDependOnWhatRunsBesideThem) {
  LAMINA_REQUIRE_MODEL();
  const auto requests = mixed_requests(model);

  // One slot: the requests run one after another through the queue.
  EngineOptions alone;
  alone.prefix_cache = false;
  const auto one_by_one = run_all(model, 1, alone, requests);
  for (const auto& r : one_by_one) {
    ASSERT_FALSE(r.generated_ids.empty());
    EXPECT_NE(r.finish, FinishReason::Error) << r.error;
  }

  // Every request at once, then eight slots with queueing, small steps and chunks.
  expect_same(one_by_one, run_all(model, 32, EngineOptions{}, requests));
  EngineOptions small_steps;
  small_steps.max_step_tokens = 12;
  small_steps.prefill_chunk = 5;
  expect_same(one_by_one, run_all(model, 8, small_steps, requests));

  // The generation loop gives the same tokens and text for each kind of request.
  for (std::size_t i = 0; i < 4; ++i) {
    CpuForward forward(model, forward_options(1));
    const auto expected = generate(model, forward, requests[i].prompt_ids, as_generate_options(requests[i]));
    EXPECT_EQ(one_by_one[i].generated_ids, expected.generated_ids) << "request " << i;
    EXPECT_EQ(one_by_one[i].text, expected.text) << "request " << i;
  }
}

TEST(Engine, SeededSamplingRepeatsAndDependsOnTheSeed) {
  LAMINA_REQUIRE_MODEL();
  const CompletionRequest request = sampled_request(model, kPrompts[1], 48, 42);
  CompletionRequest other_seed = request;
  other_seed.sampling.seed = 43;
  const auto results = run_all(model, 4, EngineOptions{}, {request, other_seed, request});

  EXPECT_EQ(results[0].generated_ids, results[2].generated_ids);
  EXPECT_EQ(results[0].text, results[2].text);
  EXPECT_NE(results[0].generated_ids, results[1].generated_ids);

  CpuForward forward(model, forward_options(1));
  const auto expected = generate(model, forward, request.prompt_ids, as_generate_options(request));
  EXPECT_EQ(results[0].generated_ids, expected.generated_ids);
  EXPECT_EQ(results[0].text, expected.text);
}

// A long prompt split into chunks of 7 tokens gives the same tokens and
// log-probabilities, bit for bit, as the prompt in one piece.
TEST(Engine, ChunkedPrefillGivesTheSameResult) {
  LAMINA_REQUIRE_MODEL();
  std::string prompt;
  for (int i = 0; i < 4; ++i) prompt += std::string(kPrompts[5]) + " it. ";
  CompletionRequest greedy = greedy_request(model, prompt, 24);
  greedy.top_logprobs = 3;
  greedy.stop_at_eog = false;
  ASSERT_GT(greedy.prompt_ids.size(), 80u);
  const CompletionRequest sampled = sampled_request(model, prompt, 24, 5);

  auto run = [&](uint32_t chunk) {
    EngineOptions options;
    options.prefill_chunk = chunk;
    std::vector<std::unique_ptr<Collector>> collectors;
    CpuForward forward(model, forward_options(2));
    collectors.push_back(std::make_unique<Collector>());
    collectors.push_back(std::make_unique<Collector>());
    Engine engine(model, forward, options);
    EXPECT_NE(engine.submit(greedy, collectors[0]->callbacks()), 0u);
    EXPECT_NE(engine.submit(sampled, collectors[1]->callbacks()), 0u);
    collectors[1]->wait();
    return std::make_pair(collectors[0]->events(), collectors[1]->wait());
  };
  const auto [whole_events, whole_sampled] = run(256);
  const auto [chunked_events, chunked_sampled] = run(7);
  ASSERT_EQ(whole_events.size(), 24u);
  ASSERT_EQ(chunked_events.size(), whole_events.size());
  for (std::size_t i = 0; i < whole_events.size(); ++i) {
    EXPECT_EQ(chunked_events[i].id, whole_events[i].id) << "token " << i;
    EXPECT_EQ(chunked_events[i].chosen.logprob, whole_events[i].chosen.logprob) << "token " << i;
    ASSERT_EQ(chunked_events[i].top.size(), 3u);
    for (std::size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(chunked_events[i].top[k].id, whole_events[i].top[k].id);
      EXPECT_EQ(chunked_events[i].top[k].logprob, whole_events[i].top[k].logprob);
    }
  }
  EXPECT_EQ(chunked_sampled.generated_ids, whole_sampled.generated_ids);
}

TEST(Engine, PrefixCacheSkipsSharedTokensAndKeepsTheResult) {
  LAMINA_REQUIRE_MODEL();
  const CompletionRequest first = greedy_request(model, kPrompts[1], 20);
  CpuForward forward(model, forward_options(2));
  Engine engine(model, forward, EngineOptions{});
  Collector c1;
  ASSERT_NE(engine.submit(first, c1.callbacks()), 0u);
  const CompletionResult r1 = c1.wait();
  ASSERT_EQ(r1.generated_ids.size(), 20u);
  EXPECT_EQ(r1.cached_prompt_tokens, 0u);

  // The slot holds the prompt and every generated token but the last (never fed).
  std::vector<int32_t> held = first.prompt_ids;
  held.insert(held.end(), r1.generated_ids.begin(), r1.generated_ids.end() - 1);

  // A continuation: the prompt, ten generated tokens, then new text.
  CompletionRequest second = first;
  second.prompt_ids.insert(second.prompt_ids.end(), r1.generated_ids.begin(), r1.generated_ids.begin() + 10);
  for (int32_t id : model.tokenizer().encode(" and the cat said", false, false)) second.prompt_ids.push_back(id);
  std::size_t shared = 0;
  while (shared < held.size() && held[shared] == second.prompt_ids[shared]) ++shared;
  ASSERT_GE(shared, first.prompt_ids.size() + 10);

  Collector c2, c3;
  ASSERT_NE(engine.submit(second, c2.callbacks()), 0u);
  const CompletionResult r2 = c2.wait();
  EXPECT_EQ(r2.cached_prompt_tokens, shared);
  // The same prompt again: all but its last token come from the cache.
  ASSERT_NE(engine.submit(first, c3.callbacks()), 0u);
  const CompletionResult r3 = c3.wait();
  EXPECT_EQ(r3.cached_prompt_tokens, first.prompt_ids.size() - 1);
  EXPECT_EQ(r3.generated_ids, r1.generated_ids);
  EXPECT_EQ(engine.stats().cached_prompt_tokens_total, shared + first.prompt_ids.size() - 1);

  EngineOptions no_cache;
  no_cache.prefix_cache = false;
  const auto uncached = run_all(model, 2, no_cache, {second});
  EXPECT_EQ(uncached[0].cached_prompt_tokens, 0u);
  EXPECT_EQ(r2.generated_ids, uncached[0].generated_ids);
  EXPECT_EQ(r2.text, uncached[0].text);
}

// Log-softmax in long double, from logits of a separate forward pass.
std::vector<double> log_softmax(std::span<const float> logits) {
  long double sum = 0.0L;
  for (float v : logits) sum += std::exp(static_cast<long double>(v));
  std::vector<double> out;
  for (float v : logits) out.push_back(static_cast<double>(static_cast<long double>(v) - std::log(sum)));
  return out;
}

// Checks the events of a request against logits computed here; `penalize`
// turns the raw logits into the ones the sampler saw.
void check_logprobs(const Model& model, const CompletionRequest& request, const std::vector<TokenEvent>& events,
                    const std::function<void(std::span<float>)>& penalize, const std::function<void(int32_t)>& accept) {
  CpuForward forward(model, forward_options(1));
  std::vector<TokenInput> batch;
  for (std::size_t i = 0; i < request.prompt_ids.size(); ++i)
    batch.push_back({request.prompt_ids[i], static_cast<uint32_t>(i), 0, i + 1 == request.prompt_ids.size()});
  auto raw = forward.decode(batch);
  uint32_t pos = static_cast<uint32_t>(request.prompt_ids.size());
  for (std::size_t t = 0; t < events.size(); ++t) {
    std::vector<float> logits(raw.begin(), raw.end());
    penalize(logits);
    const auto expected = log_softmax(logits);
    const TokenEvent& e = events[t];
    EXPECT_EQ(e.id, argmax(logits)) << "token " << t;
    EXPECT_EQ(e.chosen.id, e.id);
    EXPECT_FLOAT_EQ(e.chosen.logprob, static_cast<float>(expected[static_cast<std::size_t>(e.id)])) << "token " << t;
    ASSERT_EQ(e.top.size(), static_cast<std::size_t>(request.top_logprobs));
    EXPECT_EQ(e.top[0].id, e.id);
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    for (std::size_t k = 0; k < e.top.size(); ++k) {
      EXPECT_EQ(e.top[k].id, order[k]) << "token " << t << " rank " << k;
      EXPECT_FLOAT_EQ(e.top[k].logprob, static_cast<float>(expected[static_cast<std::size_t>(order[k])]));
      if (k > 0) {
        EXPECT_GE(e.top[k - 1].logprob, e.top[k].logprob);
      }
    }
    accept(e.id);
    const TokenInput next{e.id, pos++, 0, true};
    raw = forward.decode(std::span(&next, 1));
  }
}

TEST(Engine, LogprobsAreTheLogSoftmaxOfTheLogits) {
  LAMINA_REQUIRE_MODEL();
  CompletionRequest request = greedy_request(model, kPrompts[3], 16);
  request.top_logprobs = 5;
  request.stop_at_eog = false;
  Collector c;
  {
    CpuForward forward(model, forward_options(4));
    Engine engine(model, forward, EngineOptions{});
    // Neighbours, so that the request's logits come from a mixed batch.
    Collector n1, n2;
    engine.submit(sampled_request(model, kPrompts[0], 30, 1), n1.callbacks());
    engine.submit(request, c.callbacks());
    engine.submit(sampled_request(model, kPrompts[7], 30, 2), n2.callbacks());
    n1.wait();
    n2.wait();
  }
  ASSERT_EQ(c.events().size(), 16u);
  check_logprobs(model, request, c.events(), [](std::span<float>) {}, [](int32_t) {});
}

TEST(Engine, LogprobsFollowThePenalties) {
  LAMINA_REQUIRE_MODEL();
  CompletionRequest request = greedy_request(model, kPrompts[1], 16);
  request.top_logprobs = 4;
  request.stop_at_eog = false;
  request.sampling.repeat_penalty = 1.5f;
  request.sampling.frequency_penalty = 0.3f;
  Collector c;
  {
    CpuForward forward(model, forward_options(1));
    Engine engine(model, forward, EngineOptions{});
    engine.submit(request, c.callbacks());
    c.wait();
  }
  ASSERT_EQ(c.events().size(), 16u);
  // A sampler of the same settings applies the penalties (and only them: it is greedy).
  Sampler penalties(request.sampling);
  for (int32_t id : request.prompt_ids) penalties.accept(id);
  check_logprobs(
      model, request, c.events(), [&](std::span<float> logits) { penalties.sample(logits); },
      [&](int32_t id) { penalties.accept(id); });
}

}  // namespace
}  // namespace lamina::model::engine_test

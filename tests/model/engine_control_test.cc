// The serving engine's control paths: stop strings, lengths, end of
// generation, cancellation, the queue bound, invalid requests, shutdown,
// failures of the forward pass and the statistics.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>

#include "engine_test_util.h"
#include "lamina/model/generate.h"

namespace lamina::model::engine_test {
namespace {

const char* const kPrompt = "Once upon a time, there was a little girl named Lily. She";

// Lets a test hold the engine thread inside a callback until it says go.
// The hold ends by itself after a while, so that a failed assertion in the
// test (which then never opens the gate) cannot hang the engine's destructor.
class Gate {
 public:
  void arrive() {
    std::unique_lock lock(mutex_);
    arrived_ = true;
    changed_.notify_all();
    changed_.wait_for(lock, std::chrono::seconds(10), [&] { return opened_; });
  }
  void wait_arrived() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return arrived_; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    opened_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool arrived_ = false;
  bool opened_ = false;
};

TEST(EngineControl, StopStringsEndTheTextBeforeTheMatch) {
  LAMINA_REQUIRE_MODEL();
  CompletionRequest request = greedy_request(model, kPrompt, 80);
  request.stop_at_eog = false;
  const CompletionResult full = run_all(model, 1, EngineOptions{}, {request})[0];
  ASSERT_EQ(full.generated_ids.size(), 80u);

  // Stop strings taken from the middle of the text: they span token boundaries.
  for (std::size_t at : {full.text.size() / 3, full.text.size() / 2}) {
    const std::string stop = full.text.substr(at, 5);
    CompletionRequest stopping = request;
    stopping.stop = {"never in this text", stop};
    Collector c;
    {
      CpuForward forward(model, forward_options(1));
      Engine engine(model, forward, EngineOptions{});
      ASSERT_NE(engine.submit(stopping, c.callbacks()), 0u);
      c.wait();
    }
    const CompletionResult& r = c.wait();
    EXPECT_EQ(r.finish, FinishReason::StopString);
    EXPECT_EQ(r.text, full.text.substr(0, full.text.find(stop))) << "stop '" << stop << "'";
    ASSERT_LT(r.generated_ids.size(), full.generated_ids.size());
    EXPECT_TRUE(std::equal(r.generated_ids.begin(), r.generated_ids.end(), full.generated_ids.begin()));
    EXPECT_EQ(c.streamed_text(), r.text);
    std::string shown;
    for (const auto& e : c.events()) shown += e.text;
    EXPECT_EQ(shown.find(stop), std::string::npos);
  }
}

TEST(EngineControl, MaxTokensAndAFullContextEndWithLength) {
  LAMINA_REQUIRE_MODEL();
  CompletionRequest five = greedy_request(model, kPrompt, 5);
  five.stop_at_eog = false;
  CompletionRequest unbounded = greedy_request(model, "Once upon a time", -1);
  unbounded.stop_at_eog = false;
  CompletionRequest none = greedy_request(model, kPrompt, 0);
  const auto results = run_all(model, 3, EngineOptions{}, {five, unbounded, none}, 64);

  EXPECT_EQ(results[0].finish, FinishReason::Length);
  EXPECT_EQ(results[0].generated_ids.size(), 5u);
  // Every position of the context is used; the last token is sampled, never fed.
  EXPECT_EQ(results[1].finish, FinishReason::ContextFull);
  EXPECT_EQ(results[1].generated_ids.size(), 64 - unbounded.prompt_ids.size() + 1);
  CpuForward forward(model, forward_options(1, 64));
  GenerateOptions o;
  o.n_predict = -1;
  o.sampling = unbounded.sampling;
  o.stop_at_eog = false;
  const auto expected = generate(model, forward, unbounded.prompt_ids, o);
  EXPECT_EQ(expected.finish, FinishReason::ContextFull);
  EXPECT_EQ(results[1].generated_ids, expected.generated_ids);
  EXPECT_EQ(results[1].text, expected.text);

  EXPECT_EQ(results[2].finish, FinishReason::Length);
  EXPECT_TRUE(results[2].generated_ids.empty());
}

// Hands everything to another forward pass; the tests below change one part.
class PassThroughForward : public Forward {
 public:
  explicit PassThroughForward(Forward& inner) : inner_(inner) {}
  std::span<const float> decode(std::span<const TokenInput> batch) override { return inner_.decode(batch); }
  std::vector<float> trace_last_token(std::span<const TokenInput> batch, std::vector<float>& logits) override {
    return inner_.trace_last_token(batch, logits);
  }
  const ModelConfig& config() const override { return inner_.config(); }
  uint32_t n_ctx() const override { return inner_.n_ctx(); }
  uint32_t n_seq() const override { return inner_.n_seq(); }
  std::size_t kv_cache_bytes() const override { return inner_.kv_cache_bytes(); }
  std::string backend_name() const override { return inner_.backend_name(); }
  uint32_t kv_blocks() const override { return inner_.kv_blocks(); }
  void set_block_table(uint32_t seq, std::span<const uint32_t> blocks) override {
    inner_.set_block_table(seq, blocks);
  }
  void copy_kv_block(uint32_t src, uint32_t dst, uint32_t n_pos) override { inner_.copy_kv_block(src, dst, n_pos); }
  std::size_t kv_block_bytes() const override { return inner_.kv_block_bytes(); }

 protected:
  Forward& inner_;
};

// Passes logits through, except that one token wins at one position: the
// test model never ends a story with an end-of-generation token by itself.
class ForcedTokenForward final : public PassThroughForward {
 public:
  ForcedTokenForward(Forward& inner, int32_t token, uint32_t at_pos)
      : PassThroughForward(inner), token_(token), at_pos_(at_pos) {}

  std::span<const float> decode(std::span<const TokenInput> batch) override {
    const auto logits = inner_.decode(batch);
    logits_.assign(logits.begin(), logits.end());
    std::size_t row = 0;
    for (const TokenInput& t : batch) {
      if (!t.logits) continue;
      if (t.pos == at_pos_) logits_[row * config().n_vocab + static_cast<std::size_t>(token_)] = 1e4f;
      ++row;
    }
    return logits_;
  }

 private:
  int32_t token_;
  uint32_t at_pos_;
  std::vector<float> logits_;
};

TEST(EngineControl, EndOfGenerationStops) {
  LAMINA_REQUIRE_MODEL();
  CompletionRequest request = greedy_request(model, kPrompt, 30);
  request.stop_at_eog = false;
  const CompletionResult plain = run_all(model, 1, EngineOptions{}, {request})[0];
  ASSERT_EQ(plain.generated_ids.size(), 30u);

  // The end-of-text token becomes the 11th generated token.
  const int32_t eos = model.tokenizer().eos_id();
  ASSERT_TRUE(model.tokenizer().is_eog(eos));
  const auto n_prompt = static_cast<uint32_t>(request.prompt_ids.size());
  const std::vector<int32_t> before(plain.generated_ids.begin(), plain.generated_ids.begin() + 10);
  const std::string text_before = model.tokenizer().decode(before, {.strip_space_prefix = false});

  for (bool stop_at_eog : {true, false}) {
    CompletionRequest r = request;
    r.stop_at_eog = stop_at_eog;
    // A stop string that the text's last character might begin: it is held
    // back, so it reaches the caller through text_tail.
    r.stop = {text_before.substr(text_before.size() - 1) + "\x01"};
    CpuForward cpu(model, forward_options(1));
    ForcedTokenForward forward(cpu, eos, n_prompt + 9);
    Collector c;
    {
      Engine engine(model, forward, EngineOptions{});
      ASSERT_NE(engine.submit(r, c.callbacks()), 0u);
      c.wait();
    }
    const CompletionResult& result = c.wait();
    if (stop_at_eog) {
      EXPECT_EQ(result.finish, FinishReason::EndOfGeneration);
      EXPECT_EQ(result.generated_ids, before);
      EXPECT_EQ(c.events().size(), before.size());  // the end-of-text token is not sent
      EXPECT_EQ(result.text, text_before);
      EXPECT_EQ(result.text_tail, text_before.substr(text_before.size() - 1));
    } else {
      EXPECT_EQ(result.finish, FinishReason::Length);
      ASSERT_EQ(result.generated_ids.size(), 30u);
      EXPECT_EQ(result.generated_ids[10], eos);
      EXPECT_EQ(result.text_tail, "");
    }
    EXPECT_EQ(c.streamed_text(), result.text);
  }
}

TEST(EngineControl, CancelEndsARunningRequest) {
  LAMINA_REQUIRE_MODEL();
  CpuForward forward(model, forward_options(2));
  Engine engine(model, forward, EngineOptions{});
  Gate gate;
  Collector c;
  c.on_token = [&](const TokenEvent&, std::size_t n) {
    if (n == 3) gate.arrive();
    return true;
  };
  CompletionRequest request = greedy_request(model, kPrompt, -1);
  request.stop_at_eog = false;
  const auto id = engine.submit(request, c.callbacks());
  ASSERT_NE(id, 0u);
  gate.wait_arrived();
  engine.cancel(id);
  gate.open();
  const CompletionResult& r = c.wait();
  EXPECT_EQ(r.finish, FinishReason::Cancelled);
  EXPECT_EQ(r.generated_ids.size(), 3u);
  EXPECT_EQ(c.streamed_text(), r.text);
  engine.cancel(id);  // already done: nothing happens
  engine.cancel(12345);
  EXPECT_EQ(c.done_count(), 1);

  // The freed slot serves the next request.
  Collector next;
  ASSERT_NE(engine.submit(greedy_request(model, kPrompt, 4), next.callbacks()), 0u);
  EXPECT_EQ(next.wait().finish, FinishReason::Length);
}

TEST(EngineControl, OnTokenReturningFalseCancels) {
  LAMINA_REQUIRE_MODEL();
  CpuForward forward(model, forward_options(1));
  Engine engine(model, forward, EngineOptions{});
  Collector c;
  c.on_token = [](const TokenEvent&, std::size_t n) { return n < 4; };
  ASSERT_NE(engine.submit(greedy_request(model, kPrompt, 50), c.callbacks()), 0u);
  const CompletionResult& r = c.wait();
  EXPECT_EQ(r.finish, FinishReason::Cancelled);
  EXPECT_EQ(r.generated_ids.size(), 4u);
  EXPECT_EQ(c.events().size(), 4u);
}

TEST(EngineControl, QueueBoundRefusesAndCancelledWaitersAreReported) {
  LAMINA_REQUIRE_MODEL();
  CpuForward forward(model, forward_options(1));
  EngineOptions options;
  options.max_queue = 2;
  Engine engine(model, forward, options);
  Gate gate;
  Collector running, waiting1, waiting2, refused;
  running.on_token = [&](const TokenEvent&, std::size_t n) {
    if (n == 1) gate.arrive();
    return true;
  };
  const CompletionRequest request = greedy_request(model, kPrompt, 8);
  ASSERT_NE(engine.submit(request, running.callbacks()), 0u);
  gate.wait_arrived();  // the one slot is taken
  const auto w1 = engine.submit(request, waiting1.callbacks());
  ASSERT_NE(engine.submit(request, waiting2.callbacks()), 0u);
  EXPECT_EQ(engine.submit(request, refused.callbacks()), 0u);
  EXPECT_EQ(engine.stats().queue_depth, 2u);
  engine.cancel(w1);
  gate.open();
  EXPECT_EQ(running.wait().finish, FinishReason::Length);
  EXPECT_EQ(waiting1.wait().finish, FinishReason::Cancelled);
  EXPECT_TRUE(waiting1.wait().generated_ids.empty());
  EXPECT_EQ(waiting2.wait().generated_ids, running.wait().generated_ids);
  EXPECT_EQ(refused.done_count(), 0);
}

TEST(EngineControl, InvalidRequestsThrow) {
  LAMINA_REQUIRE_MODEL();
  CpuForward forward(model, forward_options(1, 32));
  Engine engine(model, forward, EngineOptions{});
  Collector c;
  CompletionRequest r = greedy_request(model, kPrompt, 4);
  r.prompt_ids.clear();
  EXPECT_THROW(engine.submit(r, c.callbacks()), std::invalid_argument);
  r.prompt_ids.assign(32, 1);
  EXPECT_THROW(engine.submit(r, c.callbacks()), std::invalid_argument);
  r.prompt_ids.assign(31, 1);  // the longest prompt that fits
  r.stop_at_eog = false;
  EXPECT_NE(engine.submit(r, c.callbacks()), 0u);
  EXPECT_EQ(c.wait().generated_ids.size(), 2u);  // the second token finds the context full
  r.prompt_ids = {1, -1};
  EXPECT_THROW(engine.submit(r, c.callbacks()), std::invalid_argument);
  r.prompt_ids = {1, static_cast<int32_t>(model.config().n_vocab)};
  EXPECT_THROW(engine.submit(r, c.callbacks()), std::invalid_argument);
  r.prompt_ids = {1, 2};
  r.top_logprobs = kMaxTopLogprobs + 1;
  EXPECT_THROW(engine.submit(r, c.callbacks()), std::invalid_argument);

  EngineOptions bad;
  bad.prefill_chunk = 0;
  EXPECT_THROW({ Engine e(model, forward, bad); }, std::invalid_argument);
  CpuForward four_slots(model, forward_options(4, 32));
  bad = EngineOptions{};
  bad.max_step_tokens = 3;
  EXPECT_THROW({ Engine e(model, four_slots, bad); }, std::invalid_argument);
}

TEST(EngineControl, ShutdownCancelsRunningAndWaitingRequests) {
  LAMINA_REQUIRE_MODEL();
  std::vector<std::unique_ptr<Collector>> collectors;
  for (int i = 0; i < 6; ++i) collectors.push_back(std::make_unique<Collector>());
  CpuForward forward(model, forward_options(2));
  Engine engine(model, forward, EngineOptions{});
  // The first request holds the engine until the others are queued, then
  // shuts it down; called on the engine thread, shutdown returns at once.
  Gate gate;
  collectors[0]->on_token = [&](const TokenEvent&, std::size_t n) {
    if (n == 1) gate.arrive();
    if (n == 2) engine.shutdown(false);
    return true;
  };
  CompletionRequest endless = greedy_request(model, kPrompt, -1);
  endless.stop_at_eog = false;
  ASSERT_NE(engine.submit(endless, collectors[0]->callbacks()), 0u);
  gate.wait_arrived();
  for (std::size_t i = 1; i < collectors.size(); ++i)
    ASSERT_NE(engine.submit(endless, collectors[i]->callbacks()), 0u);
  gate.open();
  for (auto& c : collectors) {
    EXPECT_EQ(c->wait().finish, FinishReason::Cancelled);
    EXPECT_EQ(c->done_count(), 1);
  }
  EXPECT_EQ(collectors[0]->wait().generated_ids.size(), 2u);
  engine.shutdown(false);  // from here: waits for the thread, which has ended
  EXPECT_EQ(engine.submit(endless, CompletionCallbacks{}), 0u);
  EXPECT_EQ(engine.stats().active_sequences, 0u);
}

TEST(EngineControl, ShutdownLetsRunningRequestsFinish) {
  LAMINA_REQUIRE_MODEL();
  std::vector<std::unique_ptr<Collector>> collectors;
  for (int i = 0; i < 4; ++i) collectors.push_back(std::make_unique<Collector>());
  CpuForward forward(model, forward_options(3));
  Engine engine(model, forward, EngineOptions{});
  Gate gate;
  // The first request holds the engine until the others are queued, then
  // (from the engine thread) shuts it down once they run.
  collectors[0]->on_token = [&](const TokenEvent&, std::size_t n) {
    if (n == 1) gate.arrive();
    if (n == 3) engine.shutdown(true);
    return true;
  };
  const CompletionRequest request = greedy_request(model, kPrompt, 20);
  ASSERT_NE(engine.submit(request, collectors[0]->callbacks()), 0u);
  gate.wait_arrived();
  for (int i = 1; i < 4; ++i) ASSERT_NE(engine.submit(request, collectors[i]->callbacks()), 0u);
  gate.open();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(collectors[i]->wait().finish, FinishReason::Length) << "request " << i;
    EXPECT_EQ(collectors[i]->wait().generated_ids.size(), 20u);
  }
  // Three slots: the fourth was still waiting.
  EXPECT_EQ(collectors[3]->wait().finish, FinishReason::Cancelled);
  EXPECT_TRUE(collectors[3]->wait().generated_ids.empty());
  engine.shutdown(true);
  EXPECT_EQ(engine.submit(request, CompletionCallbacks{}), 0u);
}

TEST(EngineControl, DestructorReportsEveryRequest) {
  LAMINA_REQUIRE_MODEL();
  std::vector<std::unique_ptr<Collector>> collectors;
  for (int i = 0; i < 8; ++i) collectors.push_back(std::make_unique<Collector>());
  {
    CpuForward forward(model, forward_options(2));
    Engine engine(model, forward, EngineOptions{});
    CompletionRequest endless = greedy_request(model, kPrompt, -1);
    endless.stop_at_eog = false;
    for (auto& c : collectors) ASSERT_NE(engine.submit(endless, c->callbacks()), 0u);
  }
  for (auto& c : collectors) {
    EXPECT_EQ(c->done_count(), 1);
    EXPECT_EQ(c->wait().finish, FinishReason::Cancelled);
  }
}

// A forward pass that fails when told to, for the error path.
class FailingForward final : public PassThroughForward {
 public:
  explicit FailingForward(Forward& inner) : PassThroughForward(inner) {}
  std::atomic<bool> fail{false};

  std::span<const float> decode(std::span<const TokenInput> batch) override {
    if (fail.exchange(false)) throw std::runtime_error("device lost");
    return inner_.decode(batch);
  }
  std::string backend_name() const override { return "failing " + inner_.backend_name(); }
};

TEST(EngineControl, AFailedForwardPassEndsItsRequestsWithAnError) {
  LAMINA_REQUIRE_MODEL();
  CpuForward cpu(model, forward_options(1));
  FailingForward forward(cpu);
  Engine engine(model, forward, EngineOptions{});
  const CompletionRequest request = greedy_request(model, kPrompt, 12);
  Collector first, failed, again;
  ASSERT_NE(engine.submit(request, first.callbacks()), 0u);
  first.wait();
  // Reuses the cached prefix, then fails while writing past it.
  CompletionRequest longer = request;
  for (int32_t id : first.wait().generated_ids) longer.prompt_ids.push_back(id);
  longer.prompt_ids.push_back(longer.prompt_ids[3]);
  forward.fail = true;
  ASSERT_NE(engine.submit(longer, failed.callbacks()), 0u);
  EXPECT_EQ(failed.wait().finish, FinishReason::Error);
  EXPECT_NE(failed.wait().error.find("device lost"), std::string::npos) << failed.wait().error;
  // The engine goes on; the slot keeps only what came before the failed step.
  ASSERT_NE(engine.submit(request, again.callbacks()), 0u);
  EXPECT_EQ(again.wait().generated_ids, first.wait().generated_ids);
  EXPECT_EQ(again.wait().cached_prompt_tokens, request.prompt_ids.size() - 1);
}

TEST(EngineControl, StatsCountRequestsAndTokens) {
  LAMINA_REQUIRE_MODEL();
  CpuForward forward(model, forward_options(4));
  Engine engine(model, forward, EngineOptions{});
  EXPECT_EQ(engine.n_ctx(), 256u);
  std::vector<std::unique_ptr<Collector>> collectors;
  uint64_t prompt_tokens = 0;
  for (int i = 0; i < 6; ++i) {
    collectors.push_back(std::make_unique<Collector>());
    CompletionRequest r = greedy_request(model, kPrompt, 5 + i);
    r.stop_at_eog = false;
    prompt_tokens += r.prompt_ids.size();
    ASSERT_NE(engine.submit(r, collectors.back()->callbacks()), 0u);
  }
  uint64_t generated = 0;
  for (auto& c : collectors) generated += c->wait().generated_ids.size();
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.requests_total, 6u);
  EXPECT_EQ(s.prompt_tokens_total, prompt_tokens);
  EXPECT_EQ(s.generated_tokens_total, generated);
  EXPECT_EQ(s.n_slots, 4u);
  EXPECT_EQ(s.kv_tokens_capacity, 4u * 256u);
  EXPECT_EQ(s.active_sequences, 0u);
  EXPECT_EQ(s.kv_tokens_used, 0u);
  EXPECT_EQ(s.queue_depth, 0u);
  EXPECT_GT(s.steps_total, 10u);
  EXPECT_GT(s.last_step_tokens, 0u);
}

}  // namespace
}  // namespace lamina::model::engine_test

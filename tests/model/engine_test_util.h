// Shared pieces of the serving engine tests: the model, requests built from
// text, and a collector that records a request's events and result.
#pragma once

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lamina/model/engine.h"
#include "lamina/model/forward.h"
#include "lamina/model/model.h"

namespace lamina::model::engine_test {

inline const std::filesystem::path kModelPath =
    std::filesystem::path(LAMINA_TESTDATA_DIR) / "models" / "stories260K.gguf";

// Loaded once per test program; tests skip when the file is absent.
inline const Model* shared_model() {
  static const std::unique_ptr<Model> model =
      std::filesystem::exists(kModelPath) ? Model::load(kModelPath) : nullptr;
  return model.get();
}

#define LAMINA_REQUIRE_MODEL()                                                              \
  const Model* model_ptr = shared_model();                                                  \
  if (model_ptr == nullptr) GTEST_SKIP() << "test model not found at " << kModelPath;      \
  const Model& model = *model_ptr

inline ForwardOptions forward_options(uint32_t n_seq, uint32_t n_ctx = 256) {
  ForwardOptions o;
  o.n_ctx = n_ctx;
  o.n_seq = n_seq;
  o.n_threads = 1;
  return o;
}

inline CompletionRequest greedy_request(const Model& model, const std::string& prompt, int32_t max_tokens) {
  CompletionRequest r;
  r.prompt_ids = model.tokenizer().encode(prompt, true, false);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.0f;
  return r;
}

inline CompletionRequest sampled_request(const Model& model, const std::string& prompt, int32_t max_tokens,
                                         uint64_t seed) {
  CompletionRequest r = greedy_request(model, prompt, max_tokens);
  r.sampling.temperature = 0.8f;
  r.sampling.top_k = 40;
  r.sampling.top_p = 0.9f;
  r.sampling.seed = seed;
  return r;
}

// Sampled from the model's whole distribution (temperature 1, no top-k, top-p
// or min-p), under `constraint`: what the constrained-decoding tests draw.
inline CompletionRequest full_distribution_request(const Model& model, const std::string& prompt,
                                                   int32_t max_tokens, uint64_t seed,
                                                   std::shared_ptr<TokenConstraint> constraint) {
  CompletionRequest r = greedy_request(model, prompt, max_tokens);
  r.sampling.temperature = 1.0f;
  r.sampling.top_k = 0;
  r.sampling.top_p = 1.0f;
  r.sampling.min_p = 0.0f;
  r.sampling.seed = seed;
  r.constraint = std::move(constraint);
  return r;
}

// Records one request's events and its result. `on_token`, when set, sees
// each event after it is recorded and decides whether to go on.
class Collector {
 public:
  std::function<bool(const TokenEvent&, std::size_t n_events)> on_token;

  CompletionCallbacks callbacks() {
    CompletionCallbacks cb;
    cb.on_token = [this](const TokenEvent& event) {
      std::size_t n = 0;
      {
        std::lock_guard lock(mutex_);
        events_.push_back(event);
        n = events_.size();
      }
      return on_token ? on_token(event, n) : true;
    };
    cb.on_done = [this](const CompletionResult& result) {
      std::lock_guard lock(mutex_);
      result_ = result;
      ++done_count_;
      done_.notify_all();
    };
    return cb;
  }

  const CompletionResult& wait() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return done_count_ > 0; });
    return result_;
  }
  const std::vector<TokenEvent>& events() {
    wait();
    return events_;
  }
  int done_count() {
    std::lock_guard lock(mutex_);
    return done_count_;
  }
  // The streamed pieces, then the tail: must equal the result's text.
  std::string streamed_text() {
    wait();
    std::string text;
    for (const auto& e : events_) text += e.text;
    return text + result_.text_tail;
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<TokenEvent> events_;
  CompletionResult result_;
  int done_count_ = 0;
};

// Runs requests through one engine, all submitted at once; returns the results in order.
inline std::vector<CompletionResult> run_all(const Model& model, uint32_t n_slots, const EngineOptions& options,
                                             const std::vector<CompletionRequest>& requests,
                                             uint32_t n_ctx = 256) {
  std::vector<std::unique_ptr<Collector>> collectors;
  for (std::size_t i = 0; i < requests.size(); ++i) collectors.push_back(std::make_unique<Collector>());
  CpuForward forward(model, forward_options(n_slots, n_ctx));
  Engine engine(model, forward, options);
  std::vector<bool> accepted;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    accepted.push_back(engine.submit(requests[i], collectors[i]->callbacks()) != 0);
    EXPECT_TRUE(accepted.back()) << "request " << i;
  }
  std::vector<CompletionResult> results(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!accepted[i]) continue;
    results[i] = collectors[i]->wait();
    EXPECT_EQ(collectors[i]->streamed_text(), results[i].text) << "request " << i;
  }
  return results;
}

}  // namespace lamina::model::engine_test

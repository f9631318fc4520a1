// The engine thread and its hand-over points: submit() and cancel() leave
// work under the mutex; the thread takes it between forward steps, runs the
// step without the lock, and calls back without the lock.
#include "lamina/model/engine.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "engine/embedding_jobs.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "engine/step.h"

namespace lamina::model {

using engine::Clock;
using engine::Scheduler;
using engine::Sequence;

struct Engine::State {
  State(const Model& m, Forward& f, const EngineOptions& o);

  void validate(const CompletionRequest& request) const;
  void run();
  // Waits for work and takes it; false when the thread should end.
  bool take_work(std::vector<std::unique_ptr<Sequence>>& admitted, std::vector<std::unique_ptr<Sequence>>& dropped,
                 std::vector<RequestId>& cancels, bool& cancel_running);
  void step();
  void finish_ended();

  const Model& model;
  Forward& forward;
  const EngineOptions options;
  const uint32_t n_ctx;
  const uint32_t n_vocab;
  const uint32_t n_slots;

  // Shared with the callers, under `mutex`.
  mutable std::mutex mutex;
  std::condition_variable wake;     // a request, a cancellation or a shutdown arrived
  std::condition_variable stopped;  // the engine thread ended
  std::deque<std::unique_ptr<Sequence>> queue;
  std::deque<engine::EmbeddingJob> embedding_queue;
  std::vector<RequestId> cancel_requests;
  RequestId next_id = 1;
  uint32_t n_running = 0;  // admitted and not yet reported
  bool stopping = false;
  bool cancel_running = false;
  bool thread_done = false;
  EngineStats stats;

  // The engine thread's own.
  Scheduler scheduler;
  engine::EmbeddingJobs embeddings;
  engine::StepSampling sampling;
  std::vector<Sequence*> samplers;  // the current step's, in the order of its logits
  EngineStats counters;  // accumulated here, published under the mutex
  std::thread thread;
};

Engine::State::State(const Model& m, Forward& f, const EngineOptions& o)
    : model(m), forward(f), options(o), n_ctx(f.n_ctx()), n_vocab(f.config().n_vocab),
      n_slots(f.n_seq()),
      scheduler(f, o),
      sampling(f.config().n_vocab) {
  if (options.prefill_chunk == 0) throw std::invalid_argument("prefill_chunk must be positive");
  if (options.max_step_tokens < f.n_seq())
    throw std::invalid_argument("max_step_tokens (" + std::to_string(options.max_step_tokens) +
                                ") must be at least the number of sequence slots (" + std::to_string(f.n_seq()) +
                                ")");
  counters.n_slots = f.n_seq();
  counters.kv_tokens_capacity = std::min(uint64_t{f.n_seq()} * n_ctx, uint64_t{f.kv_blocks()} * kKvBlockPositions);
  counters.kv_blocks_total = f.kv_blocks();
  stats = counters;
}

void Engine::State::validate(const CompletionRequest& request) const {
  engine::check_request(request, n_ctx, n_vocab);
  const uint32_t blocks = engine::worst_case_blocks(request, n_ctx);
  if (blocks > forward.kv_blocks())
    throw std::invalid_argument(
        "the request may need " + std::to_string(uint64_t{blocks} * kKvBlockPositions) +
        " KV positions (a prompt of " + std::to_string(request.prompt_ids.size()) + " tokens and max_tokens " +
        std::to_string(request.max_tokens) + ", within a context of " + std::to_string(n_ctx) + "), " +
        std::to_string(blocks) + " blocks of " + std::to_string(kKvBlockPositions) + "; the KV cache holds " +
        std::to_string(forward.kv_blocks()) + " blocks (ForwardOptions::kv_blocks, --kv-size)");
}

bool Engine::State::take_work(std::vector<std::unique_ptr<Sequence>>& admitted,
                              std::vector<std::unique_ptr<Sequence>>& dropped, std::vector<RequestId>& cancels,
                              bool& cancel_all) {
  std::unique_lock lock(mutex);
  wake.wait(lock, [&] {
    return stopping || !cancel_requests.empty() || !queue.empty() || !scheduler.idle() ||
           !embedding_queue.empty() || embeddings.pending();
  });
  cancels.swap(cancel_requests);
  for (auto& job : embedding_queue) embeddings.add(std::move(job));
  embedding_queue.clear();
  for (RequestId id : cancels) {
    for (auto it = queue.begin(); it != queue.end(); ++it) {
      if ((*it)->id() != id) continue;
      dropped.push_back(std::move(*it));
      queue.erase(it);
      break;
    }
  }
  if (stopping) {
    for (auto& seq : queue) dropped.push_back(std::move(seq));
    queue.clear();
  }
  // In order: a request whose KV blocks are not free yet holds back those behind it.
  while (!queue.empty() && scheduler.reserve_for(*queue.front())) {
    admitted.push_back(std::move(queue.front()));
    queue.pop_front();
  }
  n_running += static_cast<uint32_t>(admitted.size());
  cancel_all = cancel_running;
  return !(stopping && scheduler.idle() && admitted.empty());
}

void Engine::State::run() {
  std::vector<std::unique_ptr<Sequence>> admitted, dropped;
  std::vector<RequestId> cancels;
  for (;;) {
    admitted.clear();
    dropped.clear();
    cancels.clear();
    bool cancel_all = false;
    const bool go_on = take_work(admitted, dropped, cancels, cancel_all);
    for (auto& seq : dropped) {
      seq->finish(FinishReason::Cancelled);
      seq->report();
    }
    if (!go_on) break;
    try {
      const auto now = Clock::now();
      for (auto& seq : admitted) counters.prompt_tokens_total += scheduler.admit(std::move(seq), now).prompt_size();
      for (RequestId id : cancels) scheduler.cancel(id);
      if (cancel_all) scheduler.finish_all(FinishReason::Cancelled);
      step();
      embeddings.run_round(forward, scheduler);
    } catch (const std::exception& e) {
      scheduler.finish_all(FinishReason::Error, e.what());
    } catch (...) {
      scheduler.finish_all(FinishReason::Error, "unknown failure in the engine");
    }
    finish_ended();
  }
  embeddings.fail_all("the engine is shutting down");
  std::lock_guard lock(mutex);
  thread_done = true;
  stopped.notify_all();
}

void Engine::State::step() {
  const std::span<const TokenInput> batch = scheduler.plan_step();
  if (batch.empty()) return;
  samplers.clear();
  for (const engine::StepEntry& entry : scheduler.step_entries())
    if (entry.logits) samplers.push_back(entry.sequence);
  try {
    sampling.run(forward, batch, samplers);
  } catch (const std::exception& e) {
    scheduler.fail_step(std::string("forward pass failed: ") + e.what());
    return;
  }
  scheduler.commit_step();
  ++counters.steps_total;
  counters.last_step_tokens = static_cast<uint32_t>(batch.size());

  const Tokenizer& tokenizer = model.tokenizer();
  for (std::size_t i = 0; i < samplers.size(); ++i) {
    const uint32_t before = samplers[i]->n_generated();
    sampling.deliver(i, *samplers[i], tokenizer, n_ctx);
    counters.generated_tokens_total += samplers[i]->n_generated() - before;
  }
}

// Frees the slots of the requests that ended, reports them and publishes the counters.
void Engine::State::finish_ended() {
  auto ended = scheduler.take_finished();
  counters.active_sequences = scheduler.n_active();
  counters.kv_tokens_used = scheduler.kv_tokens_used();
  counters.cached_prompt_tokens_total = scheduler.cached_prompt_total();
  counters.kv_blocks_in_use = scheduler.blocks().n_in_use();
  counters.kv_blocks_cached = scheduler.blocks().n_cached_idle();
  counters.kv_blocks_peak = scheduler.peak_blocks_in_use();
  {
    // Published first, so that whoever hears of the end sees it counted.
    std::lock_guard lock(mutex);
    n_running -= static_cast<uint32_t>(ended.size());
    const uint64_t requests = stats.requests_total;
    stats = counters;
    stats.requests_total = requests;
  }
  for (auto& seq : ended) seq->report();
}

Engine::Engine(const Model& model, Forward& forward, const EngineOptions& options)
    : state_(std::make_unique<State>(model, forward, options)) {
  state_->thread = std::thread([s = state_.get()] { s->run(); });
}

Engine::~Engine() {
  shutdown(false);
  if (state_->thread.joinable()) state_->thread.join();
}

Engine::RequestId Engine::submit(CompletionRequest request, CompletionCallbacks callbacks) {
  State& s = *state_;
  s.validate(request);
  RequestId id = 0;
  {
    std::lock_guard lock(s.mutex);
    if (s.stopping) return 0;
    if (s.queue.size() + s.n_running >= std::size_t{s.n_slots} + s.options.max_queue) return 0;
    id = s.next_id++;
    s.queue.push_back(std::make_unique<Sequence>(id, std::move(request), std::move(callbacks), Clock::now()));
    ++s.stats.requests_total;
  }
  s.wake.notify_one();
  return id;
}

bool Engine::embed(EmbeddingRequest request, std::function<void(EmbeddingResult)> on_done) {
  State& s = *state_;
  engine::check_embedding_request(request, s.n_ctx, s.n_vocab, s.forward.kv_blocks());
  {
    std::lock_guard lock(s.mutex);
    if (s.stopping || s.embedding_queue.size() >= s.options.max_queue) return false;
    s.embedding_queue.push_back({std::move(request), std::move(on_done), {}, 0});
  }
  s.wake.notify_one();
  return true;
}

void Engine::cancel(RequestId id) {
  State& s = *state_;
  {
    std::lock_guard lock(s.mutex);
    if (s.thread_done) return;
    s.cancel_requests.push_back(id);
  }
  s.wake.notify_one();
}

void Engine::shutdown(bool finish_running) {
  State& s = *state_;
  {
    std::lock_guard lock(s.mutex);
    s.stopping = true;
    if (!finish_running) s.cancel_running = true;
  }
  s.wake.notify_one();
  if (std::this_thread::get_id() == s.thread.get_id()) return;
  std::unique_lock lock(s.mutex);
  s.stopped.wait(lock, [&] { return s.thread_done; });
}

EngineStats Engine::stats() const {
  std::lock_guard lock(state_->mutex);
  EngineStats out = state_->stats;
  out.queue_depth = static_cast<uint32_t>(state_->queue.size());
  return out;
}

uint32_t Engine::n_ctx() const { return state_->n_ctx; }

}  // namespace lamina::model

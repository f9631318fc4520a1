#include "engine/embedding_jobs.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>

namespace lamina::model::engine {
namespace {

void report(EmbeddingJob& job) {
  if (!job.on_done) return;
  try {
    job.on_done(std::move(job.result));
  } catch (...) {
    // The request is over either way; the engine thread must go on.
  }
}

}  // namespace

void check_embedding_request(const EmbeddingRequest& request, uint32_t n_ctx, uint32_t n_vocab) {
  if (request.inputs.empty()) throw std::invalid_argument("the embedding request has no inputs");
  for (std::size_t i = 0; i < request.inputs.size(); ++i) {
    const std::vector<int32_t>& ids = request.inputs[i];
    const std::string where = "input " + std::to_string(i);
    if (ids.empty()) throw std::invalid_argument(where + " has no tokens");
    if (ids.size() >= n_ctx)
      throw std::invalid_argument(where + " has " + std::to_string(ids.size()) + " tokens; the context holds " +
                                  std::to_string(n_ctx));
    for (const int32_t id : ids)
      if (id < 0 || static_cast<uint32_t>(id) >= n_vocab)
        throw std::invalid_argument(where + " has token id " + std::to_string(id) + ", outside the vocabulary (" +
                                    std::to_string(n_vocab) + ")");
  }
}

void EmbeddingJobs::run_round(Forward& forward, Scheduler& scheduler) {
  if (jobs_.empty()) return;
  EmbeddingJob& job = jobs_.front();
  const std::size_t left = job.request.inputs.size() - job.next;
  const std::vector<uint32_t> slots = scheduler.free_slot_ids(static_cast<uint32_t>(std::min<std::size_t>(left, scheduler.n_slots())));
  if (slots.empty()) return;
  const Pooling pooling = job.request.pooling;
  batch_.clear();
  for (std::size_t k = 0; k < slots.size(); ++k) {
    const std::vector<int32_t>& ids = job.request.inputs[job.next + k];
    scheduler.slot_holds(slots[k], {});  // until the pass has written them
    const auto n = static_cast<uint32_t>(ids.size());
    for (uint32_t pos = 0; pos < n; ++pos) batch_.push_back({ids[pos], pos, slots[k], pooling_reads(pooling, pos, n)});
  }
  const std::size_t width = forward.config().n_embd;
  try {
    const std::span<const float> states = forward.hidden_states(batch_);
    std::size_t row = 0;
    for (std::size_t k = 0; k < slots.size(); ++k) {
      const std::vector<int32_t>& ids = job.request.inputs[job.next + k];
      std::size_t rows = 0;
      for (uint32_t pos = 0; pos < ids.size(); ++pos) rows += pooling_reads(pooling, pos, static_cast<uint32_t>(ids.size()));
      job.result.vectors.push_back(pool_and_normalize(pooling, states.subspan(row * width, rows * width), width));
      row += rows;
      scheduler.slot_holds(slots[k], ids);
    }
    job.next += slots.size();
  } catch (const std::exception& e) {
    job.result.vectors.clear();
    job.result.error = std::string("forward pass failed: ") + e.what();
    job.next = job.request.inputs.size();
  }
  if (job.next < job.request.inputs.size()) return;
  EmbeddingJob done = std::move(job);
  jobs_.pop_front();
  report(done);
}

void EmbeddingJobs::fail_all(const std::string& error) {
  while (!jobs_.empty()) {
    EmbeddingJob job = std::move(jobs_.front());
    jobs_.pop_front();
    job.result.vectors.clear();
    job.result.error = error;
    report(job);
  }
}

}  // namespace lamina::model::engine

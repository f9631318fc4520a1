#include "engine/embedding_jobs.h"

#include <algorithm>
#include <exception>
#include <optional>
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

void check_embedding_request(const EmbeddingRequest& request, uint32_t n_ctx, uint32_t n_vocab, uint32_t kv_blocks) {
  if (request.inputs.empty()) throw std::invalid_argument("the embedding request has no inputs");
  for (std::size_t i = 0; i < request.inputs.size(); ++i) {
    const std::vector<int32_t>& ids = request.inputs[i];
    const std::string where = "input " + std::to_string(i);
    if (ids.empty()) throw std::invalid_argument(where + " has no tokens");
    if (ids.size() >= n_ctx)
      throw std::invalid_argument(where + " has " + std::to_string(ids.size()) + " tokens; the context holds " +
                                  std::to_string(n_ctx));
    if (kv_blocks_for(static_cast<uint32_t>(ids.size())) > kv_blocks)
      throw std::invalid_argument(where + " has " + std::to_string(ids.size()) + " tokens; the KV cache holds " +
                                  std::to_string(kv_blocks) + " blocks of " + std::to_string(kKvBlockPositions));
    for (const int32_t id : ids)
      if (id < 0 || static_cast<uint32_t>(id) >= n_vocab)
        throw std::invalid_argument(where + " has token id " + std::to_string(id) + ", outside the vocabulary (" +
                                    std::to_string(n_vocab) + ")");
  }
}

void EmbeddingJobs::run_round(Forward& forward, Scheduler& scheduler) {
  if (jobs_.empty()) return;
  EmbeddingJob& job = jobs_.front();
  std::vector<uint32_t> slots;
  while (job.next + slots.size() < job.request.inputs.size()) {
    const auto n = static_cast<uint32_t>(job.request.inputs[job.next + slots.size()].size());
    const std::optional<uint32_t> slot = scheduler.lend_slot(n);
    if (!slot) break;
    slots.push_back(*slot);
  }
  if (slots.empty()) return;
  const Pooling pooling = job.request.pooling;
  batch_.clear();
  for (std::size_t k = 0; k < slots.size(); ++k) {
    const std::vector<int32_t>& ids = job.request.inputs[job.next + k];
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
    }
    job.next += slots.size();
  } catch (const std::exception& e) {
    job.result.vectors.clear();
    job.result.error = std::string("forward pass failed: ") + e.what();
    job.next = job.request.inputs.size();
  }
  for (const uint32_t slot : slots) scheduler.return_slot(slot);
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

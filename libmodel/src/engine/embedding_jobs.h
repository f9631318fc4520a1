// Embedding requests on the engine thread: each round runs as many of the
// front request's inputs as slots and KV blocks are free (lent by the
// scheduler for the round), in one forward pass of hidden states, and pools
// them. Lives on the engine thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>

#include "engine/scheduler.h"
#include "lamina/model/engine.h"
#include "lamina/model/forward.h"

namespace lamina::model::engine {

// Throws std::invalid_argument for a request that can never run (with a
// context of `n_ctx` and a KV pool of `kv_blocks` blocks).
void check_embedding_request(const EmbeddingRequest& request, uint32_t n_ctx, uint32_t n_vocab, uint32_t kv_blocks);

struct EmbeddingJob {
  EmbeddingRequest request;
  std::function<void(EmbeddingResult)> on_done;
  EmbeddingResult result;
  std::size_t next = 0;  // inputs done
};

class EmbeddingJobs {
 public:
  void add(EmbeddingJob job) { jobs_.push_back(std::move(job)); }
  bool pending() const { return !jobs_.empty(); }
  // Runs inputs of the front job in slots the scheduler lends (none free:
  // nothing) and reports the jobs that completed.
  void run_round(Forward& forward, Scheduler& scheduler);
  // Reports every job left with `error`.
  void fail_all(const std::string& error);

 private:
  std::deque<EmbeddingJob> jobs_;
  std::vector<TokenInput> batch_;
};

}  // namespace lamina::model::engine

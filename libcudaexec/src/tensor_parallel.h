// Tensor parallelism: a model's heads and FFN columns split over N GPUs.
//
// Column-parallel products (Q/K/V, gate/up, the output head over the
// vocabulary) give each GPU whole outputs, computed as on one GPU. The
// row-parallel ones (attention output, down projection) sum over their
// inputs, which the GPUs share out: each of those sums is cut into
// kTensorSlices fixed slices of the input (whole heads, whole blocks of the
// weight format) whatever N is, each GPU computes its slices' partial
// products, an all-gather brings every slice to every GPU, and each adds
// them in slice order. So the residual stream, the logits and the sampled
// tokens are bit-identical on 1, 2 and 4 GPUs (N = 1 runs the same sliced
// arithmetic on one GPU); no all-reduce whose order depends on N is used.
#pragma once

#include <nccl.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lamina/model/config.h"
#include "lamina/model/weights.h"

namespace lamina::cudaexec::detail {

inline constexpr uint32_t kTensorSlices = 4;

// One GPU's part: rank of n_ranks (n_ranks 0: no tensor parallelism).
struct TensorShard {
  uint32_t rank = 0, n_ranks = 0;
  explicit operator bool() const { return n_ranks > 0; }
  uint32_t slices_per_rank() const { return kTensorSlices / n_ranks; }
};

// Why the model cannot run split over n_ranks GPUs (empty when it can).
std::string tensor_parallel_unsupported(const model::ModelConfig& model, const model::Weights& weights,
                                        uint32_t n_ranks);

// The model as each rank sees it: its heads, KV heads and FFN columns, and
// its share of the vocabulary (ceil(n_vocab / n_ranks); the last rank's
// output head has the rest).
model::ModelConfig shard_config(const model::ModelConfig& model, uint32_t n_ranks);

// What a rank's forward step needs to talk to the others.
struct TensorParallelComm {
  TensorShard shard;
  ncclComm_t comm = nullptr;  // null for one rank
  uint32_t n_vocab = 0;       // the whole vocabulary's
};

// One host thread per rank, each enqueuing its GPU's step: NCCL wants the
// ranks of a communicator driven concurrently (one thread per GPU), and each
// rank captures its own CUDA graph. The calling thread runs rank 0.
// (libquant's ThreadPool lets the caller take a late worker's share, which
// would serialise two ranks' collectives into a deadlock.)
class RankThreads {
 public:
  explicit RankThreads(uint32_t n_ranks);
  ~RankThreads();
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;
  // Calls task(rank) for every rank at once and returns when all have
  // returned; rethrows the first rank's exception.
  void run(const std::function<void(uint32_t)>& task);

 private:
  void work(uint32_t rank);
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable start_, finished_;
  const std::function<void(uint32_t)>* task_ = nullptr;
  uint64_t generation_ = 0;
  uint32_t running_ = 0;
  bool stop_ = false;
  std::vector<std::exception_ptr> errors_;
};

}  // namespace lamina::cudaexec::detail

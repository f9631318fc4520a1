#include "tensor_parallel.h"

#include "lamina/quant/blocks.h"

namespace lamina::cudaexec::detail {
namespace {

// Whether a row-parallel matrix's input splits into kTensorSlices slices of
// `slice` values that are whole blocks of its format.
bool slices_whole_blocks(const model::Matrix& m, uint32_t slice) {
  const uint32_t block = quant::format_traits(m.format).block_elems;
  return m.n_in == slice * kTensorSlices && slice % block == 0;
}

}  // namespace

std::string tensor_parallel_unsupported(const model::ModelConfig& m, const model::Weights& w, uint32_t n) {
  const auto s = [](uint32_t v) { return std::to_string(v); };
  if (n != 1 && n != 2 && n != 4) return "1, 2 or 4 GPUs (" + s(n) + " asked for)";
  if (m.latent_attention()) return "latent attention (split the layers instead)";
  if (m.n_expert > 0) return "mixtures of experts (split the layers instead)";
  if (m.n_head % kTensorSlices != 0)
    return "a head count that is not a multiple of " + s(kTensorSlices) + " (" + s(m.n_head) + " heads)";
  if (m.n_head_kv % n != 0)
    return s(m.n_head_kv) + " KV heads over " + s(n) + " GPUs (each needs whole KV heads)";
  if (m.n_ff % kTensorSlices != 0)
    return "an FFN width that is not a multiple of " + s(kTensorSlices) + " (" + s(m.n_ff) + ")";
  const uint32_t head_slice = m.n_head / kTensorSlices * m.head_dim_v;
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const model::LayerWeights& l = w.layers[i];
    const std::string at = "layer " + s(static_cast<uint32_t>(i)) + ": ";
    if (!slices_whole_blocks(l.wo, head_slice))
      return at + "attn_output (" + std::string(quant::format_traits(l.wo.format).name) + ", " + s(l.wo.n_in) +
             " inputs) does not split into " + s(kTensorSlices) + " slices of whole blocks";
    if (!slices_whole_blocks(l.w_down, m.n_ff / kTensorSlices))
      return at + "ffn_down (" + std::string(quant::format_traits(l.w_down.format).name) + ", " + s(l.w_down.n_in) +
             " inputs) does not split into " + s(kTensorSlices) + " slices of whole blocks";
    if (!l.w_gate && l.w_up.n_out == 2 * m.n_ff && l.b_up) return at + "a fused gate/up product with a bias";
  }
  return {};
}

model::ModelConfig shard_config(const model::ModelConfig& m, uint32_t n) {
  model::ModelConfig c = m;
  c.n_head = m.n_head / n;
  c.n_head_kv = m.n_head_kv / n;
  c.n_ff = m.n_ff / n;
  c.n_vocab = (m.n_vocab + n - 1) / n;
  // attn_scale was resolved from the whole model's head size at load.
  return c;
}

RankThreads::RankThreads(uint32_t n_ranks) : errors_(n_ranks) {
  for (uint32_t r = 1; r < n_ranks; ++r) threads_.emplace_back([this, r] { work(r); });
}

RankThreads::~RankThreads() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void RankThreads::work(uint32_t rank) {
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock lock(mutex_);
    start_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    const auto* task = task_;
    lock.unlock();
    try {
      (*task)(rank);
    } catch (...) {
      errors_[rank] = std::current_exception();
    }
    lock.lock();
    if (--running_ == 0) finished_.notify_one();
  }
}

void RankThreads::run(const std::function<void(uint32_t)>& task) {
  for (auto& e : errors_) e = nullptr;
  {
    const std::lock_guard lock(mutex_);
    task_ = &task;
    running_ = static_cast<uint32_t>(threads_.size());
    ++generation_;
  }
  start_.notify_all();
  try {
    task(0);
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [&] { return running_ == 0; });
  for (const auto& e : errors_)
    if (e) std::rethrow_exception(e);
}

}  // namespace lamina::cudaexec::detail

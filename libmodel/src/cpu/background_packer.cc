#include "background_packer.h"

#include <utility>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace lamina::model::cpu {

namespace {
// The calling thread only (Linux schedules threads one by one); elsewhere
// the thread keeps its priority.
void lowest_priority_for_this_thread() {
#if defined(__linux__)
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  (void)setpriority(PRIO_PROCESS, tid, 19);  // best effort: packing goes on either way
#endif
}
}  // namespace

BackgroundPacker::BackgroundPacker(std::vector<Matrix> matrices, std::size_t max_pending_bytes,
                                   std::function<void(const Matrix&)> soon)
    : matrices_(std::move(matrices)), max_pending_bytes_(max_pending_bytes), soon_(std::move(soon)) {
  thread_ = std::thread([this] { run(); });
}

BackgroundPacker::~BackgroundPacker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BackgroundPacker::run() {
  lowest_priority_for_this_thread();
  for (const Matrix& w : matrices_) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stop_ || pending_bytes_ < max_pending_bytes_; });
      if (stop_) return;
    }
    try {
      soon_(w);
      quant::PackedWeights p = quant::pack_weights(w.format, w.data, w.n_out, w.n_in);
      std::lock_guard lock(mutex_);
      pending_bytes_ += p.bytes();
      ready_.push_back({w, std::move(p)});
      ++packed_;
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    changed_.notify_all();
  }
}

std::vector<BackgroundPacker::Packed> BackgroundPacker::take() {
  std::vector<Packed> out;
  {
    std::lock_guard lock(mutex_);
    if (error_) std::rethrow_exception(error_);
    out.swap(ready_);
    pending_bytes_ = 0;
    taken_ += out.size();
  }
  changed_.notify_all();
  return out;
}

void BackgroundPacker::wait_ready(std::size_t n) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return ready_.size() >= n || packed_ == matrices_.size() || error_; });
}

bool BackgroundPacker::finished() {
  std::lock_guard lock(mutex_);
  return taken_ == matrices_.size();
}

}  // namespace lamina::model::cpu

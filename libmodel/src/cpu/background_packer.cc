#include "background_packer.h"

#include <utility>

namespace lamina::model::cpu {

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
  for (const Matrix& w : matrices_) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stop_ || (!paused_ && pending_bytes_ < max_pending_bytes_); });
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

void BackgroundPacker::pause(bool paused) {
  {
    std::lock_guard lock(mutex_);
    paused_ = paused;
  }
  changed_.notify_all();
}

bool BackgroundPacker::finished() {
  std::lock_guard lock(mutex_);
  return taken_ == matrices_.size();
}

}  // namespace lamina::model::cpu

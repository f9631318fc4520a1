#include "completion_channel.h"

namespace lamina::serve {

CompletionChannel::CompletionChannel(Metrics& metrics, std::string endpoint, Clock::time_point arrival,
                                     std::function<void()> notify)
    : metrics_(metrics), endpoint_(std::move(endpoint)), arrival_(arrival), notify_(std::move(notify)) {}

model::CompletionCallbacks CompletionChannel::callbacks() {
  auto self = shared_from_this();
  model::CompletionCallbacks c;
  c.on_token = [self](const model::TokenEvent& e) { return self->on_token(e); };
  c.on_done = [self](const model::CompletionResult& r) { self->on_done(r); };
  return c;
}

void CompletionChannel::ring(std::unique_lock<std::mutex>& lock) {
  const bool first = !rung_;
  rung_ = true;
  lock.unlock();
  if (first && notify_) notify_();
}

bool CompletionChannel::on_token(const model::TokenEvent& event) {
  const auto now = Clock::now();
  const double since = std::chrono::duration<double>(now - last_token_.value_or(arrival_)).count();
  if (last_token_)
    metrics_.observe_inter_token_latency(since);
  else
    metrics_.observe_time_to_first_token(since);
  last_token_ = now;
  if (abandoned_.load()) return false;
  std::unique_lock lock(mutex_);
  tokens_.push_back(event);
  ring(lock);
  return true;
}

void CompletionChannel::on_done(const model::CompletionResult& result) {
  metrics_.count_completion(endpoint_, model::finish_reason_name(result.finish), result,
                            std::chrono::duration<double>(Clock::now() - arrival_).count());
  std::unique_lock lock(mutex_);
  done_ = result;
  ring(lock);
}

CompletionChannel::Update CompletionChannel::take() {
  std::lock_guard lock(mutex_);
  rung_ = false;
  Update u;
  u.tokens.swap(tokens_);
  if (done_) {
    u.done = std::move(done_);
    done_.reset();
  }
  return u;
}

}  // namespace lamina::serve

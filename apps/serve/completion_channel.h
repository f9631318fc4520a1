// What one request's engine callbacks hand to the connection serving it: the
// engine thread pushes tokens and the result and rings `notify`, the
// connection takes them. The engine never blocks here; a connection that
// falls behind (a slow client) only lets tokens pile up in its own queue.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lamina/model/engine.h"
#include "metrics.h"

namespace lamina::serve {

class CompletionChannel : public std::enable_shared_from_this<CompletionChannel> {
 public:
  using Clock = std::chrono::steady_clock;

  // `arrival` starts the time-to-first-token clock; `endpoint` labels the
  // request's metrics. `notify` runs on the engine thread when something
  // arrives that the last take() did not see (once until the next take()).
  CompletionChannel(Metrics& metrics, std::string endpoint, Clock::time_point arrival,
                    std::function<void()> notify);

  // Callbacks for Engine::submit; they keep the channel alive.
  model::CompletionCallbacks callbacks();

  struct Update {
    std::vector<model::TokenEvent> tokens;
    std::optional<model::CompletionResult> done;  // set once, after the last token
  };
  // Takes what has arrived (possibly nothing).
  Update take();
  // The client went away: the engine's next token callback answers false.
  void abandon() { abandoned_.store(true); }

 private:
  bool on_token(const model::TokenEvent& event);
  void on_done(const model::CompletionResult& result);

  void ring(std::unique_lock<std::mutex>& lock);

  Metrics& metrics_;
  const std::string endpoint_;
  const Clock::time_point arrival_;
  const std::function<void()> notify_;
  std::optional<Clock::time_point> last_token_;  // engine thread only
  std::atomic<bool> abandoned_{false};

  std::mutex mutex_;
  std::vector<model::TokenEvent> tokens_;
  std::optional<model::CompletionResult> done_;
  bool rung_ = false;  // notify_ ran since the last take()
};

}  // namespace lamina::serve

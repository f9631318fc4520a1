// The server's Prometheus metrics: counters and latency histograms recorded
// as requests run, gauges read from the engine when scraped, rendered in the
// Prometheus text exposition format (version 0.0.4).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lamina/model/engine.h"

namespace lamina::serve {

// Cumulative buckets over fixed upper bounds (seconds), thread-safe.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);

  struct Snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf last
    double sum = 0.0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative), +Inf last
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

// What a scrape reads from outside the metrics themselves.
struct LiveGauges {
  model::EngineStats engine;
  uint32_t http_in_flight = 0;  // completion requests being served
};

class Metrics {
 public:
  Metrics();

  // Every HTTP response, by route (the path of a known route, else "other") and status.
  void count_http(std::string_view route, int status);
  // A completion request that ran on the engine, when it ends.
  void count_completion(std::string_view endpoint, std::string_view finish_reason, const model::CompletionResult& r,
                        double duration_s);
  void observe_time_to_first_token(double seconds) { ttft_.observe(seconds); }
  void observe_inter_token_latency(double seconds) { itl_.observe(seconds); }
  // Requests refused because the engine's queue was full.
  void count_rejected();

  std::string render(const LiveGauges& live) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> http_;
  std::map<std::pair<std::string, std::string>, uint64_t> completions_;
  uint64_t prompt_tokens_ = 0;
  uint64_t cached_prompt_tokens_ = 0;
  uint64_t generated_tokens_ = 0;
  uint64_t rejected_ = 0;
  Histogram ttft_;
  Histogram itl_;
  Histogram queue_;
  Histogram duration_;
};

// A number as Prometheus reads it: shortest round-trip form, +Inf/-Inf/NaN spelled out.
std::string prometheus_number(double value);

}  // namespace lamina::serve

#include "metrics.h"

#include <charconv>
#include <cmath>
#include <sstream>

namespace lamina::serve {
namespace {

std::string escape_label(std::string_view value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void header(std::ostringstream& out, std::string_view name, std::string_view type, std::string_view help) {
  out << "# HELP " << name << ' ' << help << '\n' << "# TYPE " << name << ' ' << type << '\n';
}

void scalar(std::ostringstream& out, std::string_view name, std::string_view type, std::string_view help,
            double value) {
  header(out, name, type, help);
  out << name << ' ' << prometheus_number(value) << '\n';
}

void histogram(std::ostringstream& out, std::string_view name, std::string_view help, const Histogram& h) {
  header(out, name, "histogram", help);
  const Histogram::Snapshot s = h.snapshot();
  for (std::size_t i = 0; i < s.upper_bounds.size(); ++i)
    out << name << "_bucket{le=\"" << prometheus_number(s.upper_bounds[i]) << "\"} " << s.cumulative[i] << '\n';
  out << name << "_bucket{le=\"+Inf\"} " << s.cumulative.back() << '\n';
  out << name << "_sum " << prometheus_number(s.sum) << '\n';
  out << name << "_count " << s.count << '\n';
}

}  // namespace

std::string prometheus_number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, r.ptr);
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  std::size_t bucket = 0;
  while (bucket < bounds_.size() && value > bounds_[bucket]) ++bucket;
  std::lock_guard lock(mutex_);
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

Histogram::Snapshot Histogram::snapshot() const {
  std::lock_guard lock(mutex_);
  Snapshot s;
  s.upper_bounds = bounds_;
  uint64_t running = 0;
  for (const uint64_t c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  s.sum = sum_;
  s.count = count_;
  return s;
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      itl_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      queue_({0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60}),
      duration_({0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}) {}

void Metrics::count_http(std::string_view route, int status) {
  std::lock_guard lock(mutex_);
  ++http_[{std::string(route), status}];
}

void Metrics::count_completion(std::string_view endpoint, std::string_view finish_reason,
                               const model::CompletionResult& r, double duration_s) {
  {
    std::lock_guard lock(mutex_);
    ++completions_[{std::string(endpoint), std::string(finish_reason)}];
    prompt_tokens_ += r.prompt_tokens;
    cached_prompt_tokens_ += r.cached_prompt_tokens;
    generated_tokens_ += r.generated_ids.size();
  }
  queue_.observe(r.queue_ms / 1000.0);
  duration_.observe(duration_s);
}

void Metrics::count_rejected() {
  std::lock_guard lock(mutex_);
  ++rejected_;
}

std::string Metrics::render(const LiveGauges& live) const {
  std::ostringstream out;
  {
    std::lock_guard lock(mutex_);
    header(out, "lamina_http_requests_total", "counter", "HTTP responses by route and status code.");
    for (const auto& [key, n] : http_)
      out << "lamina_http_requests_total{route=\"" << escape_label(key.first) << "\",status=\"" << key.second
          << "\"} " << n << '\n';
    header(out, "lamina_completion_requests_total", "counter",
           "Completion requests that ran, by endpoint and finish reason.");
    for (const auto& [key, n] : completions_)
      out << "lamina_completion_requests_total{endpoint=\"" << escape_label(key.first) << "\",finish_reason=\""
          << escape_label(key.second) << "\"} " << n << '\n';
    scalar(out, "lamina_rejected_requests_total", "counter", "Completion requests refused because the queue was full.",
           static_cast<double>(rejected_));
    scalar(out, "lamina_prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
           static_cast<double>(prompt_tokens_));
    scalar(out, "lamina_prompt_cached_tokens_total", "counter",
           "Prompt tokens reused from the prefix cache instead of computed.",
           static_cast<double>(cached_prompt_tokens_));
    scalar(out, "lamina_generated_tokens_total", "counter", "Tokens generated for finished requests.",
           static_cast<double>(generated_tokens_));
  }
  histogram(out, "lamina_time_to_first_token_seconds", "From arrival to the first generated token.", ttft_);
  histogram(out, "lamina_inter_token_latency_seconds", "Between consecutive tokens of one request.", itl_);
  histogram(out, "lamina_queue_wait_seconds", "From arrival to admission into a sequence slot.", queue_);
  histogram(out, "lamina_request_duration_seconds", "From arrival to the last token of a completion request.",
            duration_);

  const model::EngineStats& e = live.engine;
  scalar(out, "lamina_queue_depth", "gauge", "Requests waiting for a sequence slot.", e.queue_depth);
  scalar(out, "lamina_active_sequences", "gauge", "Sequences in the running batch.", e.active_sequences);
  scalar(out, "lamina_sequence_slots", "gauge", "Sequence slots (--parallel).", e.n_slots);
  scalar(out, "lamina_batch_tokens", "gauge", "Tokens in the most recent forward step.", e.last_step_tokens);
  scalar(out, "lamina_kv_cache_used_tokens", "gauge", "KV cache positions held by active sequences.",
         static_cast<double>(e.kv_tokens_used));
  scalar(out, "lamina_kv_cache_capacity_tokens", "gauge", "KV cache positions in all slots.",
         static_cast<double>(e.kv_tokens_capacity));
  scalar(out, "lamina_kv_cache_usage_ratio", "gauge", "Fraction of the KV cache in use.",
         e.kv_tokens_capacity ? static_cast<double>(e.kv_tokens_used) / static_cast<double>(e.kv_tokens_capacity)
                              : 0.0);
  scalar(out, "lamina_kv_blocks", "gauge", "KV cache blocks of 256 positions in the pool (--kv-size).",
         e.kv_blocks_total);
  scalar(out, "lamina_kv_blocks_in_use", "gauge", "KV blocks held by running requests.", e.kv_blocks_in_use);
  scalar(out, "lamina_kv_blocks_cached", "gauge", "KV blocks held by none, kept for the prefix cache.",
         e.kv_blocks_cached);
  scalar(out, "lamina_kv_blocks_peak", "gauge", "The most KV blocks ever in use at once.", e.kv_blocks_peak);
  scalar(out, "lamina_prefix_cache_hit_ratio", "gauge", "Fraction of admitted prompt tokens reused, not computed.",
         e.prompt_tokens_total ? static_cast<double>(e.cached_prompt_tokens_total) /
                                     static_cast<double>(e.prompt_tokens_total)
                               : 0.0);
  scalar(out, "lamina_engine_steps_total", "counter", "Forward steps the engine has run.",
         static_cast<double>(e.steps_total));
  scalar(out, "lamina_http_requests_in_flight", "gauge", "Completion requests being served.", live.http_in_flight);
  return out.str();
}

}  // namespace lamina::serve

#include "lamina/model/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace lamina::model {

int32_t argmax(std::span<const float> values) {
  int32_t best = 0;
  for (std::size_t i = 1; i < values.size(); ++i) {
    if (values[i] > values[static_cast<std::size_t>(best)]) best = static_cast<int32_t>(i);
  }
  return best;
}

Sampler::Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}

void Sampler::reset() {
  history_.clear();
  rng_.seed(options_.seed);
}

bool Sampler::picks_argmax() const {
  return options_.temperature <= 0.0f && options_.repeat_penalty == 1.0f && options_.presence_penalty == 0.0f &&
         options_.frequency_penalty == 0.0f && options_.logit_bias.empty();
}

void Sampler::accept(int32_t token) {
  if (options_.repeat_last_n == 0) return;
  history_.push_back(token);
  if (options_.repeat_last_n > 0 && history_.size() > static_cast<std::size_t>(options_.repeat_last_n))
    history_.pop_front();
}

void Sampler::apply_penalties(std::span<float> logits) const {
  const bool any = options_.repeat_penalty != 1.0f || options_.presence_penalty != 0.0f ||
                   options_.frequency_penalty != 0.0f;
  if (!any || history_.empty()) return;
  std::unordered_map<int32_t, int32_t> counts;
  for (int32_t t : history_) ++counts[t];
  for (const auto& [token, count] : counts) {
    if (token < 0 || static_cast<std::size_t>(token) >= logits.size()) continue;
    float& l = logits[static_cast<std::size_t>(token)];
    if (options_.repeat_penalty != 1.0f) l = l > 0 ? l / options_.repeat_penalty : l * options_.repeat_penalty;
    l -= static_cast<float>(count) * options_.frequency_penalty + options_.presence_penalty;
  }
}

void Sampler::apply_logit_bias(std::span<float> logits) const {
  for (const TokenBias& b : options_.logit_bias) {
    if (b.id >= 0 && static_cast<std::size_t>(b.id) < logits.size()) logits[static_cast<std::size_t>(b.id)] += b.bias;
  }
}

int32_t Sampler::sample(std::span<float> logits) {
  apply_penalties(logits);
  apply_logit_bias(logits);
  if (options_.temperature <= 0.0f) return argmax(logits);

  candidates_.clear();
  candidates_.reserve(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i)
    candidates_.push_back({static_cast<int32_t>(i), logits[i] / options_.temperature, 0.0f});
  // Descending by logit; ties by id so the order never depends on the sort.
  auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  std::size_t n = candidates_.size();
  if (options_.top_k > 0 && static_cast<std::size_t>(options_.top_k) < n) {
    n = static_cast<std::size_t>(options_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(n), candidates_.end(),
                      by_logit);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
  }
  candidates_.resize(n);

  const float max_logit = candidates_.front().logit;
  double sum = 0.0;
  for (auto& c : candidates_) {
    c.p = std::exp(c.logit - max_logit);
    sum += c.p;
  }
  for (auto& c : candidates_) c.p = static_cast<float>(c.p / sum);

  if (options_.min_p > 0.0f) {
    const float floor = candidates_.front().p * options_.min_p;
    std::size_t keep = 1;
    while (keep < n && candidates_[keep].p >= floor) ++keep;
    n = keep;
  }
  if (options_.top_p < 1.0f) {
    double cumulative = 0.0;
    std::size_t keep = 0;
    while (keep < n) {
      cumulative += candidates_[keep].p;
      ++keep;
      if (cumulative >= options_.top_p) break;
    }
    n = keep;
  }
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) total += candidates_[i].p;
  // A uniform draw from our own arithmetic: std distributions differ across
  // standard libraries, and the same seed must give the same text everywhere.
  const double u = static_cast<double>(rng_() >> 11) * (1.0 / 9007199254740992.0) * total;
  double acc = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    acc += candidates_[i].p;
    if (u < acc) return candidates_[i].id;
  }
  return candidates_[n - 1].id;
}

}  // namespace lamina::model

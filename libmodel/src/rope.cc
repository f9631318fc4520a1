#include "rope.h"

#include <algorithm>
#include <cmath>

namespace lamina::model {
namespace {

// YaRN's share of pair i's unscaled frequency: 1 for the pairs that turn
// more than beta_fast times over the original context, 0 below beta_slow
// turns, linear between (the pair bounds floored and ceiled, as llama.cpp).
double yarn_extrapolation(const RopeConfig& r, double base, uint32_t pair) {
  const auto corr_dim = [&](double turns) {
    return r.n_dims * std::log(r.yarn_orig_ctx / (turns * 2 * M_PI)) / (2 * std::log(base));
  };
  const double low = std::max(0.0, std::floor(corr_dim(r.yarn_beta_fast)));
  const double high = std::min(r.n_dims - 1.0, std::ceil(corr_dim(r.yarn_beta_slow)));
  const double y = (pair - low) / std::max(0.001, high - low);
  return 1.0 - std::clamp(y, 0.0, 1.0);
}

}  // namespace

std::vector<double> rope_inverse_frequencies(const ModelConfig& c, const Weights& w, bool local) {
  if (c.rope.kind == RopeKind::None || (local && c.rope.freq_base_swa <= 0)) return {};
  const double base = local ? c.rope.freq_base_swa : c.rope.freq_base;
  const double scale = local ? 1.0 : c.rope.freq_scale;
  std::vector<double> f(c.rope.n_dims / 2);
  for (uint32_t i = 0; i < f.size(); ++i) {
    const double mix = c.rope.yarn_orig_ctx > 0 ? yarn_extrapolation(c.rope, base, i) : 0.0;
    f[i] = (scale * (1.0 - mix) + mix) * std::pow(base, -2.0 * i / c.rope.n_dims);
    if (w.rope_freqs) f[i] /= w.rope_freqs.data[i];
  }
  return f;
}

double rope_magnitude(const ModelConfig& c) {
  return c.rope.magnitude;
}

}  // namespace lamina::model

#include "rope.h"

#include <cmath>

namespace lamina::model {

std::vector<double> rope_inverse_frequencies(const ModelConfig& c, const Weights& w, bool local) {
  if (c.rope.kind == RopeKind::None || (local && c.rope.freq_base_swa <= 0)) return {};
  const double base = local ? c.rope.freq_base_swa : c.rope.freq_base;
  const double scale = local ? 1.0 : c.rope.freq_scale;
  std::vector<double> f(c.rope.n_dims / 2);
  for (uint32_t i = 0; i < f.size(); ++i) {
    f[i] = scale * std::pow(base, -2.0 * i / c.rope.n_dims);
    if (w.rope_freqs) f[i] /= w.rope_freqs.data[i];
  }
  return f;
}

}  // namespace lamina::model

#include "lamina/model/forward.h"

namespace lamina::model {

std::vector<int32_t> Forward::decode_greedy(std::span<const TokenInput> batch) {
  const std::span<const float> logits = decode(batch);
  const std::size_t V = config().n_vocab;
  std::vector<int32_t> ids(V ? logits.size() / V : 0);
  for (std::size_t r = 0; r < ids.size(); ++r) {
    const float* row = logits.data() + r * V;
    std::size_t best = 0;
    for (std::size_t i = 1; i < V; ++i)
      if (row[i] > row[best]) best = i;
    ids[r] = static_cast<int32_t>(best);
  }
  return ids;
}

}  // namespace lamina::model

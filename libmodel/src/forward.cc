#include "lamina/model/forward.h"

#include <algorithm>
#include <string>


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


std::span<const float> Forward::hidden_states(std::span<const TokenInput>) {
  throw ModelError("the " + backend_name() + " forward pass does not return hidden states (embeddings run on the CPU)");
}

uint32_t context_size(const ModelConfig& c, uint32_t requested) {
  if (requested > 0) return requested;
  return c.n_ctx_train > 0 ? std::min<uint32_t>(c.n_ctx_train, 4096) : 4096;
}

BatchLimits batch_limits(const ModelConfig& c, const Weights& w, uint32_t n_ctx, uint32_t n_seq) {
  BatchLimits limits{.n_vocab = c.n_vocab, .n_ctx = n_ctx, .n_seq = n_seq};
  if (w.position_embd) limits.n_learned_positions = w.position_embd.n_out;
  return limits;
}

void check_batch(std::span<const TokenInput> batch, const BatchLimits& limits) {
  const auto refuse = [](const char* what, int64_t value, const std::string& why) {
    throw ModelError(std::string(what) + " " + std::to_string(value) + " " + why);
  };
  const auto n = [](uint32_t v) { return std::to_string(v); };
  for (const TokenInput& t : batch) {
    if (t.token < 0 || static_cast<uint32_t>(t.token) >= limits.n_vocab)
      refuse("token id", t.token, "is outside the vocabulary (" + n(limits.n_vocab) + ")");
    if (t.pos >= limits.n_ctx) refuse("position", t.pos, "is past the context size " + n(limits.n_ctx));
    if (t.seq >= limits.n_seq) refuse("sequence", t.seq, "has no KV cache slot (" + n(limits.n_seq) + " slots)");
    if (t.pos >= limits.n_learned_positions)
      refuse("position", t.pos, "is past the learned positions (" + n(limits.n_learned_positions) + ")");
  }
}

}  // namespace lamina::model

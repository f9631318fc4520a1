// Turning logits into the next token: penalties, then greedy or a seeded
// temperature / top-k / top-p / min-p chain.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <vector>

#include "lamina/model/export.h"

namespace lamina::model {

// A value added to one token's logit before anything else picks (OpenAI's
// logit_bias): -100 forbids the token in practice, +100 forces it.
struct LAMINA_MODEL_API TokenBias {
  int32_t id = 0;
  float bias = 0.0f;
};

inline constexpr float kMaxLogitBias = 100.0f;

struct LAMINA_MODEL_API SamplerOptions {
  float temperature = 0.8f;   // <= 0: greedy (argmax, lowest id wins ties)
  int32_t top_k = 40;         // <= 0: off
  float top_p = 0.95f;        // >= 1: off
  float min_p = 0.05f;        // <= 0: off
  float repeat_penalty = 1.0f;    // 1: off (llama.cpp semantics: divide positive, multiply negative)
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t repeat_last_n = 64;     // window of past tokens the penalties see; 0 off, -1 whole context
  uint64_t seed = 0;
  // Added after the penalties, before greedy or the temperature chain (and
  // so seen by the log-probabilities); ids outside the logits are ignored
  // here: the Engine refuses them.
  std::vector<TokenBias> logit_bias = {};
};

class LAMINA_MODEL_API Sampler {
 public:
  explicit Sampler(const SamplerOptions& options);

  // Picks the next token from `logits` (modified in place by the penalties).
  int32_t sample(std::span<float> logits);
  // Records a token (prompt or generated) for the penalties.
  void accept(int32_t token);
  void reset();

  const SamplerOptions& options() const { return options_; }
  // True when sample() is the plain argmax of the logits (greedy, no
  // penalties), so a caller may let the forward pass pick the token.
  bool picks_argmax() const;

 private:
  void apply_penalties(std::span<float> logits) const;
  void apply_logit_bias(std::span<float> logits) const;

  struct Candidate {
    int32_t id;
    float logit;
    float p;
  };

  SamplerOptions options_;
  std::mt19937_64 rng_;
  std::deque<int32_t> history_;
  std::vector<Candidate> candidates_;  // reused between calls
};

// Index of the largest value; the lowest index wins exact ties.
LAMINA_MODEL_API int32_t argmax(std::span<const float> values);

}  // namespace lamina::model

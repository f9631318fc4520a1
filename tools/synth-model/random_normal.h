// Deterministic random numbers for synthetic weights: every row of every
// tensor has its own stream, derived from (seed, tensor, row), so the values
// do not depend on how rows are split over threads.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>

namespace lamina::synth {

// Sebastiano Vigna's SplitMix64: tiny state, good enough for weights.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next_u64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in (-1, 1), 53 bits.
  double next_signed_unit() {
    return static_cast<double>(next_u64() >> 11) * 0x1p-52 - 1.0;
  }

 private:
  uint64_t state_;
};

// The stream of one row of one tensor.
inline SplitMix64 row_stream(uint64_t seed, uint64_t tensor, uint64_t row) {
  SplitMix64 mix(seed ^ (tensor * 0xD1B54A32D192ED03ull));
  const uint64_t tensor_seed = mix.next_u64();
  SplitMix64 row_mix(tensor_seed ^ (row * 0x9E3779B97F4A7C15ull));
  return SplitMix64(row_mix.next_u64());
}

// Fills `out` with mean + stddev * N(0, 1) (Marsaglia's polar method).
inline void fill_normal(SplitMix64& rng, float mean, float stddev, std::span<float> out) {
  for (std::size_t i = 0; i < out.size();) {
    double u, v, s;
    do {
      u = rng.next_signed_unit();
      v = rng.next_signed_unit();
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double f = std::sqrt(-2.0 * std::log(s) / s);
    out[i++] = static_cast<float>(mean + stddev * u * f);
    if (i < out.size()) out[i++] = static_cast<float>(mean + stddev * v * f);
  }
}

}  // namespace lamina::synth

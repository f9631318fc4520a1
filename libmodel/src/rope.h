// The angles of rotary position embeddings, one definition for the CPU
// forward and the GPU executor's description.
#pragma once

#include <cstdint>
#include <vector>

#include "lamina/model/config.h"
#include "lamina/model/weights.h"

namespace lamina::model {

// Per rotated pair i, the angle per position: freq_scale * base^(-2i/n_dims)
// (with YaRN, blended with the unscaled base^(-2i/n_dims) by the pair's
// ramp), divided by rope_freqs[i] where the file has frequency factors. `local`
// gives the windowed layers' own base (rope.freq_base_swa), which llama.cpp
// applies without the linear scaling. Empty without RoPE (or without a
// local base when `local`).
std::vector<double> rope_inverse_frequencies(const ModelConfig& c, const Weights& w, bool local);

// The factor of the main table's cos and sin (RopeConfig::magnitude; the
// local base is never YaRN-scaled).
double rope_magnitude(const ModelConfig& c);

}  // namespace lamina::model

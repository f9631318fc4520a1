// Writing a synthetic model file tensor by tensor: random rows are generated
// and converted (F16, or the per-tensor types of a quantization mix, chosen
// by the same rules as lamina-quantize) while the file is written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <ostream>

#include "presets.h"
#include "quant_mix.h"

namespace lamina::synth {

struct SynthOptions {
  const ModelPreset* preset = nullptr;
  const quantize::QuantMix* mix = nullptr;
  std::filesystem::path output;
  uint64_t seed = 0;
  std::size_t threads = 0;  // 0: one per hardware thread
};

struct SynthSummary {
  std::size_t n_tensors = 0;
  uint64_t n_params = 0;
  uint64_t tensor_bytes = 0;
};

// Throws on an invalid preset or an I/O error; no file is left behind then.
SynthSummary write_synth_model(const SynthOptions& options, std::ostream& progress);

}  // namespace lamina::synth

// lamina-quantize's work: read a GGUF model, choose each tensor's type, and
// write the converted model tensor by tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>

#include "quant_mix.h"
#include "lamina/gguf/types.h"

namespace lamina::quantize {

struct QuantizeOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  const QuantMix* mix = nullptr;
  bool pure = false;
  std::optional<gguf::TensorType> output_type;
  std::optional<gguf::TensorType> token_embd_type;
  std::size_t threads = 0;  // 0: one per hardware thread
};

struct QuantizeSummary {
  std::size_t n_tensors = 0;
  std::size_t n_converted = 0;
  std::size_t n_fallback = 0;
  uint64_t bytes_in = 0;   // tensor data
  uint64_t bytes_out = 0;
};

// Writes options.output from options.input, one progress line per tensor to
// `progress`. The input is only read; the output appears only once complete.
// Throws (QuantizeError, gguf::GgufError, ...) with a message naming the file
// or tensor at fault.
QuantizeSummary quantize_model(const QuantizeOptions& options, std::ostream& progress);

}  // namespace lamina::quantize

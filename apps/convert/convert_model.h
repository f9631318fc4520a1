// lamina-convert's work: read a Hugging Face model folder as GGUF (the form
// llama.cpp's converter writes) and write it with the chosen tensor types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>

namespace lamina::convert {

struct ConvertOptions {
  std::filesystem::path input;   // the model folder
  std::filesystem::path output;  // the GGUF file to write
  std::string type = "f16";      // f32, f16, bf16 or a quantization mix (q8_0, q4_k_m, ...)
  std::size_t threads = 0;       // 0: one per hardware thread
};

struct ConvertSummary {
  std::size_t n_tensors = 0;
  std::size_t n_converted = 0;
  uint64_t bytes_out = 0;
};

// Writes options.output, one progress line per tensor to `progress`. Refuses
// an output that is the folder or one of its files; the output appears only
// once complete. Throws std::runtime_error (ModelError, GgufError, ...) with a
// message naming the file or tensor at fault.
ConvertSummary convert_model(const ConvertOptions& options, std::ostream& progress);

}  // namespace lamina::convert

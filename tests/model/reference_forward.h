// A slow, obvious float64 forward pass: the oracle the fast paths are tested
// against. It reads the hyperparameters from GGUF metadata, dequantizes every
// weight exactly once and runs plain loops in double.
//
// Architectures: llama (also Llama 3 rope_freqs factors), qwen2, qwen3,
// qwen3moe, phi3, gpt2 and gemma2 (reference_model.cc holds the table).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "lamina/gguf/file.h"

namespace lamina::model::reference {

// Exact math by default. The switches reproduce two things llama.cpp's CPU
// backend does, so that its logits can be matched closely:
struct ReferenceOptions {
  // Round a matmul's input to f32 and through the weight format's activation
  // format (Q8_0 / Q8_K / F16) before the dot products.
  bool emulate_ggml_activation_quant = false;
  // GELU via ggml's f16 table (input and output rounded to f16).
  bool emulate_ggml_gelu_f16 = false;
};

struct ModelState;

// One sequence, fed one token at a time from position 0, with a KV cache in
// double. The session keeps its own copy of the weights, so the GgufFile is
// needed only while it is constructed.
class ReferenceSession {
 public:
  ReferenceSession(const gguf::GgufFile& file, const ReferenceOptions& options);
  ~ReferenceSession();
  ReferenceSession(ReferenceSession&&) noexcept;
  ReferenceSession& operator=(ReferenceSession&&) noexcept;

  // Runs `token` at position n_past() and returns the logits (n_vocab values).
  std::vector<float> append(int32_t token);

  size_t n_past() const;
  size_t n_vocab() const;

 private:
  std::unique_ptr<ModelState> state_;
};

// Logits of every position, [tokens.size() x n_vocab] row-major, for the
// sequence processed causally from position 0 (no BOS is added).
std::vector<float> reference_logits(const gguf::GgufFile& file, std::span<const int32_t> tokens,
                                    const ReferenceOptions& options);

}  // namespace lamina::model::reference

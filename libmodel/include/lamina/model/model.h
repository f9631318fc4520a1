// A loaded model: the mapped file, its hyperparameters, bound weights and tokenizer.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

#include "lamina/gguf/file.h"
#include "lamina/model/config.h"
#include "lamina/model/tokenizer.h"
#include "lamina/model/weights.h"
#include "lamina/model/export.h"

namespace lamina::model {

struct LAMINA_MODEL_API LoadOptions {
  // Reads every page of the weights once at load (so the first tokens do not
  // wait on the disk), reporting the fraction done.
  bool prefault = true;
  std::function<void(double fraction)> on_progress;
  // Quantizes the float matrices to this format at load (Q8_0, Q4_K, ...):
  // faster, at the cost of exactness. Unset: the weights run as stored.
  std::optional<quant::QuantFormat> quantize;
};

class LAMINA_MODEL_API Model {
 public:
  // Maps and validates the file (a GGUF file, or a Hugging Face model folder
  // read as hf_model.h describes), reads the configuration, binds the weights
  // and builds the tokenizer. Throws gguf::GgufError or ModelError.
  static std::unique_ptr<Model> load(const std::filesystem::path& path, const LoadOptions& options = {});

  const gguf::GgufFile& file() const { return file_; }
  const ModelConfig& config() const { return config_; }
  const Weights& weights() const { return weights_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  // Total bytes of the weight tensors.
  uint64_t weight_bytes() const;
  uint64_t n_params() const;

 private:
  Model(gguf::GgufFile file, ModelConfig config, Weights weights, Tokenizer tokenizer);

  gguf::GgufFile file_;
  ModelConfig config_;
  Weights weights_;
  Tokenizer tokenizer_;
};

}  // namespace lamina::model

#include "lamina/model/model.h"

#include <algorithm>

#include "lamina/model/hf_model.h"
#include "quantize_at_load.h"

namespace lamina::model {

Model::Model(gguf::GgufFile file, ModelConfig config, Weights weights, Tokenizer tokenizer)
    : file_(std::move(file)), config_(config), weights_(std::move(weights)), tokenizer_(std::move(tokenizer)) {}

namespace {

// Touches one byte per page of every tensor so the weights are read in now,
// in order (the mapped GGUF file, or a Hugging Face folder's safetensors).
void prefault(const gguf::GgufFile& file, const std::function<void(double)>& on_progress) {
  constexpr std::size_t kPage = 4096, kReport = std::size_t{64} << 20;
  uint64_t total = 0, done = 0, reported = 0;
  for (const auto& t : file.tensors()) total += t.n_bytes;
  volatile unsigned char sink = 0;
  for (const auto& t : file.tensors()) {
    for (std::size_t p = 0; p < t.data.size(); p += kPage) sink = sink + static_cast<unsigned char>(t.data[p]);
    done += t.n_bytes;
    if (on_progress && (done - reported >= kReport || done == total)) {
      on_progress(static_cast<double>(done) / static_cast<double>(total));
      reported = done;
    }
  }
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::filesystem::path& path, const LoadOptions& options) {
  auto file = is_hf_model_dir(path) ? load_hf_model(path) : gguf::GgufFile::open(path);
  if (options.prefault) prefault(file, options.on_progress);
  if (options.quantize) file = quantize_weights(std::move(file), *options.quantize);
  try {
    ModelConfig config = load_config(file);
    Weights weights = bind_weights(file, config);
    Tokenizer tokenizer = Tokenizer::from_gguf(file);
    if (static_cast<uint32_t>(tokenizer.n_vocab()) != config.n_vocab)
      throw ModelError("tokenizer has " + std::to_string(tokenizer.n_vocab()) + " tokens but the model's vocabulary is " +
                       std::to_string(config.n_vocab));
    // The weights point into the mapping (or an assembled file's buffers),
    // which moves with the GgufFile without relocating, so the views stay valid.
    return std::unique_ptr<Model>(new Model(std::move(file), config, std::move(weights), std::move(tokenizer)));
  } catch (const std::exception& e) {
    throw ModelError(path.string() + ": " + e.what());
  }
}

uint64_t Model::weight_bytes() const {
  uint64_t n = 0;
  for (const auto& t : file_.tensors()) n += t.n_bytes;
  return n;
}

uint64_t Model::n_params() const {
  uint64_t n = 0;
  for (const auto& t : file_.tensors()) n += t.n_elements;
  return n;
}

}  // namespace lamina::model

#include "lamina/model/model.h"

#include <algorithm>

namespace lamina::model {

Model::Model(gguf::GgufFile file, ModelConfig config, Weights weights, Tokenizer tokenizer)
    : file_(std::move(file)), config_(config), weights_(std::move(weights)), tokenizer_(std::move(tokenizer)) {}

namespace {

// Touches one byte per page so the mapping is read in now, in order.
void prefault(std::span<const std::byte> bytes, const std::function<void(double)>& on_progress) {
  constexpr std::size_t kPage = 4096, kChunk = std::size_t{64} << 20;
  volatile unsigned char sink = 0;
  for (std::size_t off = 0; off < bytes.size(); off += kChunk) {
    const std::size_t end = std::min(bytes.size(), off + kChunk);
    for (std::size_t p = off; p < end; p += kPage) sink = sink + static_cast<unsigned char>(bytes[p]);
    if (on_progress) on_progress(static_cast<double>(end) / static_cast<double>(bytes.size()));
  }
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::filesystem::path& path, const LoadOptions& options) {
  auto file = gguf::GgufFile::open(path);
  if (options.prefault) prefault(file.bytes(), options.on_progress);
  try {
    ModelConfig config = load_config(file);
    Weights weights = bind_weights(file, config);
    Tokenizer tokenizer = Tokenizer::from_gguf(file);
    if (static_cast<uint32_t>(tokenizer.n_vocab()) != config.n_vocab)
      throw ModelError("tokenizer has " + std::to_string(tokenizer.n_vocab()) + " tokens but the model's vocabulary is " +
                       std::to_string(config.n_vocab));
    // The weights point into the mapping, which moves with the GgufFile
    // without relocating, so the views stay valid.
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

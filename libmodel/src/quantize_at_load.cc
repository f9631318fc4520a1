#include "quantize_at_load.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lamina/model/config.h"
#include "lamina/quant/reference.h"
#include "lamina/quant/thread_pool.h"

namespace lamina::model {
namespace {

struct QuantizedWeights {
  std::optional<gguf::GgufFile> source;
  std::vector<std::unique_ptr<std::byte[]>> buffers;
};

bool is_float(gguf::TensorType t) {
  return t == gguf::TensorType::F32 || t == gguf::TensorType::F16 || t == gguf::TensorType::BF16;
}

// The tensors llama.cpp's quantizer converts: matrices and expert stacks,
// but not norms, learned position tables or the experts' routers.
bool quantizable(const gguf::TensorInfo& t, quant::QuantFormat format) {
  const std::string_view name = t.name;
  return (t.n_dims == 2 || t.n_dims == 3) && is_float(t.type) && name.ends_with(".weight") &&
         !name.ends_with("_norm.weight") && !name.ends_with("ffn_gate_inp.weight") && name != "position_embd.weight" &&
         t.ne[0] % quant::format_traits(format).block_elems == 0;
}

}  // namespace

gguf::GgufFile quantize_weights(gguf::GgufFile file, quant::QuantFormat format) {
  const quant::FormatTraits& traits = quant::format_traits(format);
  if (!traits.is_weight_format) throw ModelError("LoadOptions::quantize: " + std::string(traits.name) + " cannot hold weights");
  auto owner = std::make_shared<QuantizedWeights>();
  std::vector<gguf::TensorInfo> tensors = file.tensors();
  quant::ThreadPool pool(0);
  for (gguf::TensorInfo& t : tensors) {
    if (!quantizable(t, format) || static_cast<uint32_t>(t.type) == static_cast<uint32_t>(format)) continue;
    const auto from = *quant::format_from_id(static_cast<uint32_t>(t.type));
    const uint64_t n_in = t.ne[0], n_rows = t.n_rows();
    const uint64_t in_row = quant::row_bytes(from, n_in), out_row = quant::row_bytes(format, n_in);
    auto buffer = std::make_unique<std::byte[]>(n_rows * out_row);
    const std::byte* src = t.data.data();
    std::byte* dst = buffer.get();
    pool.parallel_for(n_rows, 16, [&](std::size_t begin, std::size_t end) {
      std::vector<float> row(n_in);
      for (std::size_t r = begin; r < end; ++r) {
        quant::dequantize_row_ref(from, src + r * in_row, row.data(), n_in);
        quant::quantize_row_ref(format, row.data(), dst + r * out_row, n_in);
      }
    });
    t.type = static_cast<gguf::TensorType>(static_cast<uint32_t>(format));
    t.data = {dst, n_rows * out_row};
    owner->buffers.push_back(std::move(buffer));
  }
  std::vector<gguf::KeyValue> metadata = file.metadata();
  owner->source.emplace(std::move(file));  // the views of unchanged tensors point into it
  return gguf::GgufFile::assemble(std::move(metadata), std::move(tensors), std::move(owner));
}

}  // namespace lamina::model

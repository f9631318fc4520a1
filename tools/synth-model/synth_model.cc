#include "synth_model.h"

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "bpe_vocab.h"
#include "lamina/gguf/writer.h"
#include "lamina/quant/thread_pool.h"
#include "model_layout.h"
#include "random_normal.h"
#include "row_conversion.h"
#include "tensor_report.h"
#include "tensor_type_rules.h"

namespace lamina::synth {
namespace {

using gguf::TensorType;

std::vector<quantize::TypeChoice> choose_types(const ModelPreset& preset,
                                               const std::vector<SynthTensor>& tensors,
                                               const quantize::QuantMix& mix) {
  quantize::ModelShape shape;
  shape.arch = std::string(preset.arch);
  shape.n_layer = preset.n_layer;
  shape.n_head = preset.n_head;
  shape.n_head_kv = preset.n_head_kv;
  shape.n_expert = preset.n_expert;
  std::vector<quantize::TensorSpec> specs;
  // Generated values are f32: tensors the mix leaves alone stay F32.
  for (const SynthTensor& t : tensors) specs.push_back({t.name, TensorType::F32, t.shape});
  quantize::TypeRuleOptions rules;
  rules.mix = &mix;
  return quantize::choose_tensor_types(shape, specs, rules);
}

uint64_t product(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

}  // namespace

SynthSummary write_synth_model(const SynthOptions& options, std::ostream& progress) {
  if (options.preset == nullptr || options.mix == nullptr)
    throw std::invalid_argument("write_synth_model: preset and mix are required");
  const ModelPreset& preset = *options.preset;
  const std::vector<SynthTensor> tensors = model_tensors(preset);
  const std::vector<quantize::TypeChoice> types = choose_types(preset, tensors, *options.mix);

  gguf::GgufWriter writer;
  const BpeVocab vocab = make_bpe_vocab(preset.n_vocab, *preset.tokenizer, options.seed);
  add_model_metadata(preset, vocab, options.mix->file_type, options.seed, writer);
  for (std::size_t i = 0; i < tensors.size(); ++i)
    writer.add_tensor_deferred(tensors[i].name, types[i].type, tensors[i].shape);

  SynthSummary summary;
  summary.n_tensors = tensors.size();
  quant::ThreadPool pool(options.threads);
  progress << "lamina-synth-model: " << preset.name << " as " << options.mix->name << " -> "
           << options.output.string() << ", seed " << options.seed << ", " << pool.num_threads()
           << " thread(s)\n";
  writer.write_file(options.output, [&](std::size_t index, std::span<std::byte> out) {
    const SynthTensor& t = tensors[index];
    const uint64_t row_length = t.shape[0];
    const uint64_t n_rows = product(t.shape) / row_length;
    const auto source = [&](uint64_t row, std::span<float> values) {
      SplitMix64 rng = row_stream(options.seed, index, row);
      fill_normal(rng, t.mean, t.stddev, values);
    };
    quantize::convert_rows(source, n_rows, row_length, *quantize::quant_format_of(types[index].type),
                           out, pool);
    summary.n_params += n_rows * row_length;
    summary.tensor_bytes += out.size();
    char counter[32];
    std::snprintf(counter, sizeof counter, "[%4zu/%4zu] ", index + 1, tensors.size());
    progress << counter << t.name << ' ' << quantize::shape_text(t.shape) << ' '
             << gguf::tensor_type_name(types[index].type) << ", "
             << quantize::byte_size_text(out.size()) << '\n'
             << std::flush;
  });
  return summary;
}

}  // namespace lamina::synth

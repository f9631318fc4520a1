// What a synthetic model holds: its tensors (llama.cpp names and shapes, with
// the distribution of their random values) and its metadata.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bpe_vocab.h"
#include "lamina/gguf/writer.h"
#include "presets.h"
#include "quant_mix.h"

namespace lamina::synth {

struct SynthTensor {
  std::string name;
  std::vector<uint64_t> shape;  // ne0 (row length) first
  float mean;                   // values are N(mean, stddev)
  float stddev;
};

// token_embd, output_norm, output (untied presets), then block by block.
std::vector<SynthTensor> model_tensors(const ModelPreset& preset);

// general.*, the architecture's hyperparameters and the tokenizer.
void add_model_metadata(const ModelPreset& preset, const BpeVocab& vocab,
                        quantize::FileType file_type, uint64_t seed, gguf::GgufWriter& writer);

}  // namespace lamina::synth

// Hugging Face model folders (config.json, safetensors weights, tokenizer.json)
// read as the GGUF file llama.cpp's convert_hf_to_gguf.py would write for them,
// so every GGUF reader in lamina (configuration, weights, tokenizer) takes
// either. Supported classes: LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM, GPT2LMHeadModel,
// Gemma2ForCausalLM.
#pragma once

#include <filesystem>

#include "lamina/gguf/file.h"
#include "lamina/model/export.h"

namespace lamina::model {

// True when `path` is a folder holding a config.json.
LAMINA_MODEL_API bool is_hf_model_dir(const std::filesystem::path& path);

// Maps the weights read-only and builds the GGUF form in memory: tensors the
// converter leaves unchanged are views into the mapped safetensors files,
// changed ones (permuted, transposed, shifted, 1-D ones in F32) are owned
// copies kept alive by the returned file. Throws ModelError naming the file,
// key or tensor at fault.
LAMINA_MODEL_API gguf::GgufFile load_hf_model(const std::filesystem::path& dir);

// A folder's tokenizer alone (tokenizer.json, with tokenizer_config.json and
// config.json where present) as a vocabulary-only GGUF file: the tokenizer.* keys
// load_hf_model writes, no tensors. The vocabulary size is config.json's
// vocab_size, else one past the largest token id. Throws ModelError.
LAMINA_MODEL_API gguf::GgufFile load_hf_tokenizer(const std::filesystem::path& dir);

}  // namespace lamina::model

// A model folder's tokenizer (tokenizer.json, tokenizer_config.json and the
// ids in config.json) as the tokenizer.ggml.* keys llama.cpp's converter
// writes, so the GGUF tokenizers run it:
//  - byte-level BPE -> model "gpt2": tokens, token types (CONTROL for special
//    added tokens, USER_DEFINED for the others), merges, and a
//    tokenizer.ggml.pre named after the pre-tokenizer's regex;
//  - BPE with byte fallback and the Metaspace '▁' -> model "llama": tokens
//    with BYTE/CONTROL/NORMAL types and scores from the merge order;
//  - the special token ids, the add_bos/add_eos flags and the chat template
//    as gguf-py's SpecialVocab reads them.
#pragma once

#include <filesystem>

#include "hf/architecture_metadata.h"
#include "hf/hf_config.h"
#include "hf/metadata_builder.h"

namespace lamina::model::hf {

// arch.n_vocab 0: the tokenizer's own size (one past its largest token id). Throws
// ModelError naming the file and field of a tokenizer.json it cannot read.
void add_tokenizer_metadata(const std::filesystem::path& dir, const HfConfig& config, const HfArchitecture& arch,
                            MetadataBuilder& out);

// Adds the special token ids, add_* flags and the chat template (internal to
// add_tokenizer_metadata; `n_vocab` bounds the ids).
void add_special_tokens(const std::filesystem::path& dir, const Json& tokenizer_json, const HfConfig& config,
                        uint32_t n_vocab, MetadataBuilder& out);

}  // namespace lamina::model::hf

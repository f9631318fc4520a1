// A synthetic byte-level BPE vocabulary ("gpt2" in GGUF terms) of any size:
// the 256 byte tokens, merged word pieces up to the requested size, and the
// style's special tokens at the end. Every merge joins two earlier tokens into
// a new one, so a BPE tokenizer built from it can encode any text and decode
// it back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "presets.h"

namespace lamina::synth {

struct BpeVocab {
  std::vector<std::string> tokens;    // byte-level text (GPT-2's byte-to-character map)
  std::vector<int32_t> token_types;   // 1 normal, 3 control
  std::vector<std::string> merges;    // "left right", highest priority first
  int32_t bos = -1, eos = -1, padding = -1;
};

// Builds a vocabulary of exactly n_vocab tokens, the same for the same seed.
// Throws std::invalid_argument when n_vocab leaves no room for the byte tokens
// and the style's special tokens.
BpeVocab make_bpe_vocab(uint32_t n_vocab, const TokenizerStyle& style, uint64_t seed);

// GPT-2's byte-level character for a byte: printable bytes stand for
// themselves, the others for U+0100 onwards (a space is "Ġ").
std::string byte_level_char(uint8_t byte);

}  // namespace lamina::synth

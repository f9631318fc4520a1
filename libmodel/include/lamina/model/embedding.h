// Sentence embeddings from a model's final hidden states (after the final
// norm, without the output head): pooled over a text's tokens and scaled to
// unit length.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lamina/model/model.h"
#include "lamina/model/export.h"

namespace lamina::model {

enum class Pooling {
  Last,   // the last token's state: what a decoder has read the whole text by
  Mean,   // the mean over the tokens
  First,  // the first token's (a CLS token's) state
};

// The pooling a GGUF names in `<arch>.pooling_type` (llama.cpp's numbers:
// 1 mean, 2 cls, 3 last); nullopt when absent or 0 (none). Throws ModelError
// for a value this engine does not pool by (4, rank) or a malformed key.
LAMINA_MODEL_API std::optional<Pooling> pooling_of(const Model& model);

// "last", "mean", "first"; and back (nullopt for another name).
LAMINA_MODEL_API std::string pooling_name(Pooling pooling);
LAMINA_MODEL_API std::optional<Pooling> pooling_by_name(const std::string& name);

// Which of a text's `n_tokens` positions the pooling reads.
LAMINA_MODEL_API bool pooling_reads(Pooling pooling, uint32_t pos, uint32_t n_tokens);

// Pools `states` (the rows pooling_reads() selected, in position order,
// `width` values each) and scales the result to unit L2 norm (sums in double,
// in a fixed order). A zero vector stays zero.
LAMINA_MODEL_API std::vector<float> pool_and_normalize(Pooling pooling, std::span<const float> states,
                                                       std::size_t width);

}  // namespace lamina::model

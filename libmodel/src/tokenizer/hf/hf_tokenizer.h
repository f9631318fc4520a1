// Internal: a whole tokenizer.json pipeline: added tokens, normalizer, pre-tokenizer,
// model, post-processor and decoder, run as the `tokenizers` library runs them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/hf/added_tokens.h"
#include "tokenizer/hf/pipeline.h"

namespace lamina::model::detail::hf {

class HfTokenizer {
 public:
  // Throws TokenizerError naming the section and field it cannot use.
  explicit HfTokenizer(std::string_view json_text);

  // add_special: the post-processor's special tokens. match_special: special added
  // tokens written in the text are those tokens (otherwise their text is encoded).
  void encode(std::string_view text, bool add_special, bool match_special, std::vector<int32_t>& out) const;
  // Throws std::out_of_range for an id that is no token.
  std::string decode(std::span<const int32_t> ids, bool skip_special, const DecodeMode& mode) const;

  // One past the largest id of the model and the added tokens.
  int32_t vocab_size() const;
  std::optional<std::string_view> token(int32_t id) const;
  const AddedVocabulary& added() const { return added_; }
  const Model& model() const { return *model_; }

 private:
  void encode_text(std::string_view text, bool at_origin, bool match_special, std::vector<int32_t>& out) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  AddedVocabulary added_;
};

}  // namespace lamina::model::detail::hf

// Internal: the components of a Hugging Face tokenizer.json pipeline, each built from
// the file's own parameters: normalizers, pre-tokenizers, models, post-processors and
// decoders, as the `tokenizers` library defines them.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/string_table.h"
#include "tokenizer/text_index.h"

namespace lamina::model::detail::hf {

using Json = nlohmann::json;

// A piece of the input on its way through the pre-tokenizers. `at_origin`: the piece
// starts at the very start of the input (Metaspace's prepend scheme "first" asks).
struct Piece {
  std::string text;
  bool at_origin = false;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& text) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` by their parts; empty parts are dropped.
  virtual void split(std::vector<Piece>& pieces) const = 0;
};

// Token strings by id and ids by string (ids may have gaps, which stay empty).
struct VocabTable {
  StringTable texts;
  TextIndex index;

  int32_t find(std::string_view text) const { return index.find(text, texts); }
  int32_t size() const { return static_cast<int32_t>(texts.size()); }
  std::optional<std::string_view> text(int32_t id) const {
    if (id < 0 || id >= size() || texts[static_cast<std::size_t>(id)].empty()) return std::nullopt;
    return texts[static_cast<std::size_t>(id)];
  }
};

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one pre-tokenized word.
  virtual void tokenize(std::string_view word, std::vector<int32_t>& out) const = 0;
  const VocabTable& vocab() const { return vocab_; }

 protected:
  VocabTable vocab_;
};

// How a decoder chain is run: as a whole text (what `tokenizers` decode() does), or as
// a stretch in the middle of a text (one token's piece, or a continuation), where the
// steps that act on the text's start are left out and bytes are passed through raw.
struct DecodeMode {
  bool continuation = false;
  bool raw_bytes = false;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode(std::vector<std::string>& tokens, const DecodeMode& mode) const = 0;
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Adds the special tokens of a single sequence around `ids`.
  virtual void process(std::vector<int32_t>& ids) const = 0;
};

// Factories: each reads one tokenizer.json section (a null section gives nullptr) and
// throws TokenizerError naming the section and field it cannot read.
std::unique_ptr<Normalizer> make_normalizer(const Json& spec);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& spec);
std::unique_ptr<Model> make_model(const Json& spec);
std::unique_ptr<Decoder> make_decoder(const Json& spec);
std::unique_ptr<PostProcessor> make_post_processor(const Json& spec);

// JSON helpers shared by the factories.
[[noreturn]] void fail(std::string_view where, const std::string& what);
std::string type_of(const Json& spec, std::string_view where);
std::string string_field(const Json& spec, std::string_view key, std::string_view where,
                         std::optional<std::string_view> fallback = std::nullopt);
bool bool_field(const Json& spec, std::string_view key, bool fallback, std::string_view where);
// A `pattern` field: {"String": s} or {"Regex": r}; sets `is_regex`.
std::string pattern_field(const Json& spec, std::string_view where, bool& is_regex);

// The steps of a Sequence: each entry of the list at `key`, made by `make` (which may
// return nullptr for a step that does nothing).
template <typename Step, typename Make>
std::vector<std::unique_ptr<Step>> make_steps(const Json& spec, const char* key, std::string_view where, Make make) {
  const auto it = spec.find(key);
  if (it == spec.end() || !it->is_array()) fail(where, std::string("has no \"") + key + "\" list");
  std::vector<std::unique_ptr<Step>> steps;
  for (const Json& entry : *it) {
    if (auto step = make(entry)) steps.push_back(std::move(step));
  }
  return steps;
}

// A model's vocab object ({"text": id, ...}) as a table.
VocabTable vocab_from_object(const Json& vocab, std::string_view where);

}  // namespace lamina::model::detail::hf

// Constrained decoding: a grammar (GBNF, as llama.cpp writes it, or compiled
// from a JSON schema) that masks the logits before sampling so that the
// generated text always belongs to the grammar's language.
//
// Grammar: compiled once, immutable, shareable between threads.
// GrammarVocabulary: the tokens' bytes in a trie; one per tokenizer, shared.
// TokenConstraint: a grammar bound to a vocabulary, with the caches (states,
//   transitions, masks) every sequence under it shares; thread-safe.
// GrammarMatcher: one sequence's position in the grammar.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lamina/model/export.h"

namespace lamina::model {

class Tokenizer;

// A malformed grammar or an unsupported / impossible schema. GBNF messages
// name the line and column; schema messages name the JSON pointer.
class LAMINA_MODEL_API GrammarError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LAMINA_MODEL_API JsonSchemaOptions {
  // Objects never carry properties their schema does not list (a narrower
  // language is always valid), in either mode; an object schema without
  // `properties` takes any keys. Strict mode (OpenAI's) also refuses a schema
  // whose objects with properties lack "additionalProperties": false.
  bool strict = false;
};

class LAMINA_MODEL_API Grammar {
 public:
  // `text` in GBNF; `root` names the start rule.
  static std::shared_ptr<const Grammar> from_gbnf(std::string_view text, std::string_view root = "root");
  // A JSON schema (as JSON text) compiled to a grammar of the JSON texts it accepts.
  static std::shared_ptr<const Grammar> from_json_schema(std::string_view schema, const JsonSchemaOptions& options = {});
  // Any JSON object (OpenAI's json_object response format).
  static std::shared_ptr<const Grammar> json_object();
  // The GBNF the schema compiles to (what from_json_schema parses).
  static std::string json_schema_to_gbnf(std::string_view schema, const JsonSchemaOptions& options = {});

  ~Grammar();
  struct LAMINA_MODEL_LOCAL Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Grammar(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class LAMINA_MODEL_API GrammarVocabulary {
 public:
  // Control, user-defined and unknown tokens and empty pieces never match
  // grammar text; end-of-generation tokens are allowed where the grammar may end.
  static std::shared_ptr<const GrammarVocabulary> from_tokenizer(const Tokenizer& tokenizer);
  // The same, where special tokens whose text is one of `markers` (a tool-call
  // format's markers, tool_call_marker_tokens) also match that text.
  static std::shared_ptr<const GrammarVocabulary> from_tokenizer(const Tokenizer& tokenizer,
                                                                 const std::vector<std::string>& markers);
  // For tests: token id i stands for pieces[i]; `eog` lists the end tokens.
  static std::shared_ptr<const GrammarVocabulary> from_pieces(std::vector<std::string> pieces,
                                                              std::vector<int32_t> eog);
  int32_t n_vocab() const;

  ~GrammarVocabulary();
  struct LAMINA_MODEL_LOCAL Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit GrammarVocabulary(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class LAMINA_MODEL_API TokenConstraint {
 public:
  TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GrammarVocabulary> vocabulary);
  ~TokenConstraint();
  TokenConstraint(const TokenConstraint&) = delete;
  TokenConstraint& operator=(const TokenConstraint&) = delete;
  int32_t n_vocab() const;

  struct LAMINA_MODEL_LOCAL Impl;
  Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

class LAMINA_MODEL_API GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<TokenConstraint> constraint);

  // Sets every token not allowed now to -infinity; returns the number allowed
  // (0: the grammar is stuck, which only a vocabulary lacking some bytes allows).
  std::size_t mask_logits(std::span<float> logits);
  // The tokens allowed now, one bit per id (bit i of word i / 64), from the caches.
  std::vector<uint64_t> allowed();
  // The same, found the slow obvious way: each token's bytes run through the
  // grammar alone, no trie and no cache. For tests.
  std::vector<uint64_t> allowed_reference() const;
  // Advances past `token`; false (state unchanged) when it is not allowed.
  bool accept(int32_t token);
  // Advances past raw bytes (e.g. a prompt's forced prefix); false when they do not fit.
  bool accept_bytes(std::string_view bytes);
  // The text so far is a complete sentence of the grammar.
  bool can_end() const;
  // Nothing but the end may follow.
  bool must_end() const;

 private:
  std::shared_ptr<TokenConstraint> constraint_;
  uint32_t state_;
};

}  // namespace lamina::model

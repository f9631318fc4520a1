// tokenizer.json pipelines that need no reference files: what a broken or hostile file
// is refused with, and how text that continues a prompt decodes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "lamina/model/config.h"
#include "lamina/model/hf_model.h"
#include "lamina/model/tokenizer.h"

namespace lamina::model {
namespace {

namespace fs = std::filesystem;

// A word-level vocabulary and the special token <s> (id 5) beside it; `sections` are
// spliced into the tokenizer.json object.
std::string word_level_json(const std::string& sections) {
  return R"({"version": "1.0", "added_tokens": [{"id": 5, "content": "<s>", "special": true, "normalized": false,
    "lstrip": false, "rstrip": false, "single_word": false}], )" +
         sections +
         R"(, "model": {"type": "WordLevel", "unk_token": "<unk>",
    "vocab": {"<unk>": 0, "hello": 1, "world": 2, "▁hello": 3, "▁world": 4}}})";
}

std::string stream(StreamingDecoder& decoder, const std::vector<int32_t>& ids) {
  std::string text;
  for (int32_t id : ids) text += decoder.push(id);
  text += decoder.finish();
  return text;
}

class TempFolder {
 public:
  TempFolder() {
    char pattern[] = "/tmp/lamina-hf-tok-XXXXXX";
    const char* made = mkdtemp(pattern);
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempFolder() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

Tokenizer load(const std::string& tokenizer_json) {
  TempFolder dir;
  std::ofstream(dir.path() / "tokenizer.json") << tokenizer_json;
  return Tokenizer::from_gguf(load_hf_tokenizer(dir.path()));
}

std::string error_of(const std::string& tokenizer_json) {
  try {
    load(tokenizer_json);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "accepted";
}

TEST(HfTokenizerPipeline, RunsAWordLevelPipeline) {
  const Tokenizer tok = load(word_level_json(R"("normalizer": {"type": "Lowercase"},
    "pre_tokenizer": {"type": "WhitespaceSplit"},
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
      {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [5],
      "tokens": ["<s>"]}}},
    "decoder": null)"));
  EXPECT_TRUE(tok.has_hf_pipeline());
  EXPECT_EQ(tok.encode("Hello  WORLD there", true, true), (std::vector<int32_t>{5, 1, 2, 0}));
  EXPECT_EQ(tok.encode("Hello<s>world", false, true), (std::vector<int32_t>{1, 5, 2}));
  // Special tokens in the text stay text unless asked for.
  EXPECT_EQ(tok.encode("<s>", false, false), (std::vector<int32_t>{0}));
  // No decoder: tokens joined by spaces.
  const std::vector<int32_t> ids = {5, 1, 2};
  EXPECT_EQ(tok.decode(ids), "<s> hello world");
  EXPECT_EQ(tok.decode(ids, {.render_special = false}), "hello world");
  // Invalid UTF-8 is read as U+FFFD, never passed on raw.
  EXPECT_EQ(tok.encode("hello \xFF", false, true), (std::vector<int32_t>{1, 0}));
}

TEST(HfTokenizerPipeline, AContinuationDecodesAfterItsPrompt) {
  const Tokenizer tok = load(word_level_json(R"("normalizer": null,
    "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
    "post_processor": null,
    "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true})"));
  const std::vector<int32_t> prompt = {5, 3};  // <s> ▁hello
  StreamingDecoder after_prompt(tok, {.render_special = false});
  after_prompt.prime(prompt);
  EXPECT_EQ(stream(after_prompt, {4}), " world");
  // From the start of a text, the first token's '▁' is the prepended one.
  StreamingDecoder fresh(tok, {.render_special = false});
  EXPECT_EQ(stream(fresh, {4}), "world");
  EXPECT_EQ(tok.token_to_piece(4), " world");
  // The text after a shown special token keeps its space, as Hugging Face decodes it.
  EXPECT_EQ(tok.decode(prompt), "<s> hello");
}

TEST(HfTokenizerPipeline, BrokenAndHostileFilesAreRefusedByName) {
  EXPECT_NE(error_of(word_level_json(R"("normalizer": {"type": "Frobnicate"})")).find("unknown type 'Frobnicate'"),
            std::string::npos);
  EXPECT_NE(error_of(word_level_json(R"("pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(["},
    "behavior": "Isolated", "invert": false})")).find("does not compile"),
            std::string::npos);
  EXPECT_NE(error_of(word_level_json(R"("pre_tokenizer": {"type": "Split", "pattern": {"Regex": "a"},
    "behavior": "Sideways"})")).find("unknown behavior 'Sideways'"),
            std::string::npos);
  std::string nested = R"({"type": "Lowercase"})";
  for (int i = 0; i < 40; ++i) nested = R"({"type": "Sequence", "normalizers": [)" + nested + "]}";
  EXPECT_NE(error_of(word_level_json(R"("normalizer": )" + nested)).find("nested more than"), std::string::npos);
  EXPECT_NE(error_of(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a c"]}})")
                .find("has a part outside the vocab"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model": {"type": "Mystery"}})").find("Mystery"), std::string::npos);
  EXPECT_NE(error_of("{not json").find("tokenizer.json"), std::string::npos);
}

}  // namespace
}  // namespace lamina::model

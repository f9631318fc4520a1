// Tokenizer vectors that come with the small real models and with llama2.c.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer_test_util.h"

namespace lamina::model::test {
namespace {

nlohmann::json read_json(const std::filesystem::path& path) {
  return nlohmann::json::parse(read_bytes(path));
}

std::string stream_decode(const Tokenizer& tok, const std::vector<int32_t>& ids,
                          DecodeOptions options) {
  StreamingDecoder decoder(tok, options);
  std::string text;
  for (int32_t id : ids) text += decoder.push(id);
  return text + decoder.finish();
}

// Meta's reference SentencePiece ids for llama2.c's test prompts (BOS included).
TEST(TokenizerModels, Llama2cCasesMatchWithBos) {
  const std::filesystem::path cases_path =
      testdata_dir() / "vocab" / "llama2c-tokenizer-cases.llama-spm.json";
  const std::optional<Tokenizer> tok = tokenizer_from_testdata("vocab/ggml-vocab-llama-spm.gguf");
  if (!tok || !std::filesystem::exists(cases_path)) GTEST_SKIP() << "missing llama-spm data";
  const nlohmann::json cases = read_json(cases_path).at("cases");
  ASSERT_EQ(cases.size(), 5u);
  for (const nlohmann::json& c : cases) {
    const std::string text = c.at("text").get<std::string>();
    const auto expected = c.at("ids_with_bos").get<std::vector<int32_t>>();
    const std::vector<int32_t> ids = tok->encode(text, true, false);
    EXPECT_EQ(ids, expected) << "'" << text << "'";
    EXPECT_EQ(tok->decode(ids, {.render_special = false}), text);
  }
}

// TinyStories-656K: every score is equal, so the ids depend on merging the leftmost pair
// first; the reference ids come from llama.cpp (add_special and parse_special on).
TEST(TokenizerModels, TinyStoriesPromptsMatchLlamaCpp) {
  const std::filesystem::path ref_path =
      testdata_dir() / "models" / "TinyStories-656K-Q8_0.reference.derived.json";
  const std::optional<Tokenizer> tok =
      tokenizer_from_testdata("models/TinyStories-656K-Q8_0.gguf");
  if (!tok || !std::filesystem::exists(ref_path)) GTEST_SKIP() << "missing TinyStories data";
  EXPECT_EQ(tok->encode("Once upon a time", true, true),
            (std::vector<int32_t>{1, 80, 147, 201, 282, 57}));

  const nlohmann::json cases = read_json(ref_path).at("cases");
  ASSERT_EQ(cases.size(), 2u);
  for (const nlohmann::json& c : cases) {
    const std::string prompt = c.at("prompt").get<std::string>();
    EXPECT_EQ(tok->encode(prompt, true, true),
              c.at("prompt_ids_with_bos").get<std::vector<int32_t>>())
        << prompt;
    const auto pieces = c.at("prompt_pieces").get<std::vector<std::string>>();
    const auto ids = c.at("prompt_ids_with_bos").get<std::vector<int32_t>>();
    ASSERT_EQ(pieces.size(), ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(tok->token_text(ids[i]), pieces[i]);
  }
}

// llama.cpp renders generated tokens piece by piece ('▁' as ' ', nothing stripped);
// the streamed text must equal its expected continuation byte for byte.
TEST(TokenizerModels, TinyStoriesGeneratedIdsStreamToTheExpectedText) {
  const std::filesystem::path ref_path =
      testdata_dir() / "models" / "TinyStories-656K-Q8_0.reference.derived.json";
  const std::filesystem::path expected_path =
      testdata_dir() / "models" / "TinyStories-656K-Q8_0.expected-greedy.json";
  const std::optional<Tokenizer> tok =
      tokenizer_from_testdata("models/TinyStories-656K-Q8_0.gguf");
  if (!tok || !std::filesystem::exists(ref_path) || !std::filesystem::exists(expected_path)) {
    GTEST_SKIP() << "missing TinyStories data";
  }
  const nlohmann::json cases = read_json(ref_path).at("cases");
  const nlohmann::json expected = read_json(expected_path).at("cases");
  ASSERT_EQ(cases.size(), expected.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto ids = cases[i].at("greedy_generated_ids").get<std::vector<int32_t>>();
    const std::string text = expected[i].at("expected_text").get<std::string>();
    EXPECT_EQ(stream_decode(*tok, ids, {.strip_space_prefix = false}), text);
    std::string pieces;
    for (int32_t id : ids) pieces += tok->token_to_piece(id);
    EXPECT_EQ(pieces, text);
  }
}

TEST(TokenizerModels, TinyStoriesRoundTripsItsOwnText) {
  const std::filesystem::path expected_path =
      testdata_dir() / "models" / "TinyStories-656K-Q8_0.expected-greedy.json";
  const std::optional<Tokenizer> tok =
      tokenizer_from_testdata("models/TinyStories-656K-Q8_0.gguf");
  if (!tok || !std::filesystem::exists(expected_path)) GTEST_SKIP() << "missing TinyStories data";
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_TRUE(tok->add_bos());
  const nlohmann::json cases = read_json(expected_path).at("cases");
  for (const nlohmann::json& c : cases) {
    const std::string text = c.at("prompt").get<std::string>() +
                             c.at("expected_text").get<std::string>();
    const std::vector<int32_t> ids = tok->encode(text, true, true);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.front(), 1);
    EXPECT_EQ(tok->decode(ids, {.render_special = false}), text);
  }
}

// stories260K (llama2.c's tok512): the greedy ids decode to llama2.c's expected output,
// which drops the space of the first piece after BOS and renders <0x0A> as a newline.
TEST(TokenizerModels, Stories260KGreedyIdsDecodeToTheExpectedText) {
  const std::filesystem::path ref_path =
      testdata_dir() / "models" / "stories260K.reference.derived.json";
  const std::filesystem::path text_path =
      testdata_dir() / "models" / "stories260K.expected-greedy-200.txt";
  const std::optional<Tokenizer> tok = tokenizer_from_testdata("models/stories260K.gguf");
  if (!tok || !std::filesystem::exists(ref_path) || !std::filesystem::exists(text_path)) {
    GTEST_SKIP() << "missing stories260K data";
  }
  EXPECT_EQ(tok->n_vocab(), 512);
  EXPECT_EQ(tok->sep_id(), kNoToken);  // stored as 0xFFFFFFFF
  EXPECT_EQ(tok->pad_id(), kNoToken);
  const auto ids = read_json(ref_path).at("greedy_ids").get<std::vector<int32_t>>();
  ASSERT_EQ(ids.size(), 201u);
  ASSERT_EQ(ids.front(), tok->bos_id());
  const std::string expected = read_bytes(text_path);
  EXPECT_EQ(tok->decode(ids, {.render_special = false}), expected);
  EXPECT_EQ(stream_decode(*tok, ids, {.render_special = false}), expected);
}

TEST(TokenizerModels, Stories260KRoundTripsTextWithBytesOutsideItsPieces) {
  const std::filesystem::path text_path =
      testdata_dir() / "models" / "stories260K.expected-greedy-200.txt";
  const std::optional<Tokenizer> tok = tokenizer_from_testdata("models/stories260K.gguf");
  if (!tok || !std::filesystem::exists(text_path)) GTEST_SKIP() << "missing stories260K data";
  for (const std::string& text :
       {read_bytes(text_path), std::string("Zoë's café: 🦙 \t tabs\n\nand   spaces ")}) {
    const std::vector<int32_t> ids = tok->encode(text, true, false);
    EXPECT_EQ(ids.front(), 1);
    EXPECT_EQ(tok->decode(ids, {.render_special = false}), text);
  }
}

}  // namespace
}  // namespace lamina::model::test

// Tokenizer behaviour beyond the reference vectors: special tokens, pieces, streaming
// decode, metadata errors, tie-breaks and concurrent use.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "tokenizer_test_util.h"

namespace lamina::model::test {
namespace {

std::optional<Tokenizer> llama_spm() {
  return tokenizer_from_testdata("vocab/ggml-vocab-llama-spm.gguf");
}
std::optional<Tokenizer> gpt2() { return tokenizer_from_testdata("vocab/ggml-vocab-gpt-2.gguf"); }

int32_t byte_token(const Tokenizer& tok, unsigned char b) {
  char name[8];
  std::snprintf(name, sizeof name, "<0x%02X>", b);
  return tok.find_token(name);
}

TEST(TokenizerBehaviour, SpecialTokenTextIsParsedOnlyWhenAsked) {
  const std::optional<Tokenizer> tok = llama_spm();
  if (!tok) GTEST_SKIP() << "missing llama-spm vocabulary";
  const std::vector<int32_t> hello = tok->encode("Hello", false, false);
  std::vector<int32_t> expected = {tok->bos_id()};
  expected.insert(expected.end(), hello.begin(), hello.end());
  expected.push_back(tok->eos_id());
  // Text after a special token gets the dummy prefix again.
  EXPECT_EQ(tok->encode("<s>Hello</s>", false, true), expected);

  const std::vector<int32_t> literal = tok->encode("<s>Hello</s>", false, false);
  EXPECT_EQ(std::count(literal.begin(), literal.end(), tok->bos_id()), 0);
  EXPECT_EQ(std::count(literal.begin(), literal.end(), tok->eos_id()), 0);
  EXPECT_EQ(tok->decode(literal), "<s>Hello</s>");
}

TEST(TokenizerBehaviour, AddSpecialFollowsTheVocabularyFlags) {
  const std::optional<Tokenizer> spm = llama_spm();
  const std::optional<Tokenizer> bpe = gpt2();
  const std::optional<Tokenizer> wpm = tokenizer_from_testdata("vocab/ggml-vocab-bert-bge.gguf");
  if (!spm || !bpe || !wpm) GTEST_SKIP() << "missing vocabularies";
  ASSERT_TRUE(spm->add_bos());
  ASSERT_FALSE(spm->add_eos());
  EXPECT_EQ(spm->encode("", true, false), std::vector<int32_t>{1});
  EXPECT_EQ(spm->encode("", false, false), std::vector<int32_t>{});

  // gpt-2 adds nothing.
  EXPECT_EQ(bpe->encode("Hello", true, false), bpe->encode("Hello", false, false));

  // BERT wraps the text in [CLS] ... [SEP].
  const std::vector<int32_t> ids = wpm->encode("hello", true, false);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 101);
  EXPECT_EQ(ids.back(), 102);
}

TEST(TokenizerBehaviour, PiecesRenderSpacesBytesAndSpecials) {
  const std::optional<Tokenizer> spm = llama_spm();
  const std::optional<Tokenizer> bpe = gpt2();
  const std::optional<Tokenizer> wpm = tokenizer_from_testdata("vocab/ggml-vocab-bert-bge.gguf");
  if (!spm || !bpe || !wpm) GTEST_SKIP() << "missing vocabularies";
  EXPECT_EQ(spm->token_to_piece(spm->find_token("\xE2\x96\x81Hello")), " Hello");
  EXPECT_EQ(spm->token_to_piece(byte_token(*spm, '\n')), "\n");
  EXPECT_EQ(spm->token_to_piece(spm->bos_id()), "<s>");
  EXPECT_EQ(spm->token_to_piece(spm->bos_id(), false), "");
  EXPECT_EQ(spm->token_to_piece(spm->unk_id(), false), "");
  EXPECT_THROW(spm->token_to_piece(spm->n_vocab()), std::out_of_range);
  EXPECT_THROW(spm->token_to_piece(-1), std::out_of_range);

  EXPECT_EQ(bpe->token_to_piece(bpe->find_token("\xC4\xA0world")), " world");  // "Ġworld"
  EXPECT_EQ(bpe->token_to_piece(bpe->find_token("\xC4\x8A")), "\n");           // "Ċ"
  EXPECT_EQ(wpm->token_to_piece(wpm->find_token("\xE2\x96\x81hello")), " hello");
}

TEST(TokenizerBehaviour, EndOfGenerationTokens) {
  const std::optional<Tokenizer> phi3 = tokenizer_from_testdata("vocab/ggml-vocab-phi-3.gguf");
  const std::optional<Tokenizer> spm = llama_spm();
  if (!phi3 || !spm) GTEST_SKIP() << "missing vocabularies";
  EXPECT_EQ(phi3->eos_id(), 32000);
  EXPECT_TRUE(phi3->is_eog(32000));                           // <|endoftext|>
  EXPECT_TRUE(phi3->is_eog(phi3->find_token("<|end|>")));    // end of turn
  EXPECT_FALSE(phi3->is_eog(phi3->find_token("<|user|>")));
  EXPECT_TRUE(spm->is_eog(2));
  EXPECT_FALSE(spm->is_eog(1));
  EXPECT_FALSE(spm->is_eog(kNoToken));
}

TEST(TokenizerBehaviour, StreamingHoldsBackCharactersSplitOverByteTokens) {
  const std::optional<Tokenizer> tok = llama_spm();
  if (!tok) GTEST_SKIP() << "missing llama-spm vocabulary";
  const std::string llama = "\xF0\x9F\xA6\x99";  // U+1F999
  StreamingDecoder decoder(*tok, {.strip_space_prefix = false});
  EXPECT_EQ(decoder.push(byte_token(*tok, 0xF0)), "");
  EXPECT_EQ(decoder.push(byte_token(*tok, 0x9F)), "");
  EXPECT_EQ(decoder.push(byte_token(*tok, 0xA6)), "");
  EXPECT_EQ(decoder.push(byte_token(*tok, 0x99)), llama);
  EXPECT_EQ(decoder.push(tok->find_token("\xE2\x96\x81ok")), " ok");
  EXPECT_EQ(decoder.finish(), "");

  // An unfinished character comes out at the end as it is.
  EXPECT_EQ(decoder.push(byte_token(*tok, 0xE2)), "");
  EXPECT_EQ(decoder.push(byte_token(*tok, 0x82)), "");
  EXPECT_EQ(decoder.finish(), "\xE2\x82");

  // Bytes that can never complete a character are not held.
  EXPECT_EQ(decoder.push(byte_token(*tok, 0xFF)), "\xFF");
  EXPECT_EQ(decoder.push(byte_token(*tok, 0x80)), "\x80");
  EXPECT_EQ(decoder.push(byte_token(*tok, 0xC3)), "");
  EXPECT_EQ(decoder.push(byte_token(*tok, 'a')), "\xC3" "a");
}

bool is_complete_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    const std::size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    if (i + n > s.size()) return false;
    i += n;
  }
  return true;
}

TEST(TokenizerBehaviour, StreamingBytePairTokensEmitsOnlyWholeCharacters) {
  const std::optional<Tokenizer> tok = gpt2();
  if (!tok) GTEST_SKIP() << "missing gpt-2 vocabulary";
  const std::string text =
      "Emoji \xF0\x9F\xA6\x99\xF0\x9F\x9A\x80, \xD0\x9A\xD0\xB8\xD1\x97\xD0\xB2, "
      "\xE6\x88\x91\xE6\x83\xB3" "apple, C\xE1\xBB\xAD" "a";
  const std::vector<int32_t> ids = tok->encode(text, false, false);
  StreamingDecoder decoder(*tok);
  std::string streamed;
  int split_pieces = 0;
  for (int32_t id : ids) {
    split_pieces += is_complete_utf8(tok->token_to_piece(id)) ? 0 : 1;
    const std::string out = decoder.push(id);
    EXPECT_TRUE(is_complete_utf8(out));
    streamed += out;
  }
  streamed += decoder.finish();
  EXPECT_GT(split_pieces, 0) << "the text should split some character over tokens";
  EXPECT_EQ(streamed, text);
}

TEST(TokenizerBehaviour, StreamingEqualsDecode) {
  const std::optional<Tokenizer> tok = llama_spm();
  if (!tok) GTEST_SKIP() << "missing llama-spm vocabulary";
  const std::string text = "<s> Wörter 🦙 mit\tTabs</s>und  mehr";
  const std::vector<int32_t> ids = tok->encode(text, true, true);
  for (const DecodeOptions options :
       {DecodeOptions{}, DecodeOptions{.render_special = false},
        DecodeOptions{.render_special = true, .strip_space_prefix = false}}) {
    StreamingDecoder decoder(*tok, options);
    std::string streamed;
    for (int32_t id : ids) streamed += decoder.push(id);
    streamed += decoder.finish();
    EXPECT_EQ(streamed, tok->decode(ids, options));
  }
  // As Hugging Face decodes Llama 2: only the text's first space is taken for the dummy
  // prefix, so the prefixes the encoder added after "<s>" and "</s>" stay.
  EXPECT_EQ(tok->decode(ids), "<s><s>  W\xC3\xB6rter \xF0\x9F\xA6\x99 mit\tTabs</s> und  mehr");
}

// Equal scores: the leftmost pair merges first.
TEST(TokenizerBehaviour, SentencePieceMergesLeftmostPairOnEqualScores) {
  VocabSpec spec;
  spec.tokens = {"<unk>", "<s>", "</s>", "a", "b", "ab", "ba", "\xE2\x96\x81"};
  spec.types = {2, 3, 3, 1, 1, 1, 1, 1};
  spec.scores = {0, 0, 0, -1, -1, -5, -5, -1};
  std::vector<std::byte> storage;
  const Tokenizer equal = Tokenizer::from_gguf(make_vocab_file(spec, storage));
  EXPECT_EQ(equal.encode("aba", false, false), (std::vector<int32_t>{7, 5, 3}));
  EXPECT_EQ(equal.encode("bab", false, false), (std::vector<int32_t>{7, 6, 4}));

  spec.scores = {0, 0, 0, -1, -1, -5, -4, -1};  // "ba" now scores higher
  const Tokenizer higher = Tokenizer::from_gguf(make_vocab_file(spec, storage));
  EXPECT_EQ(higher.encode("aba", false, false), (std::vector<int32_t>{7, 3, 6}));
  // Without byte tokens an unknown character becomes <unk>.
  EXPECT_EQ(higher.encode("c", false, false), (std::vector<int32_t>{7, 0}));
}

// Merges apply by rank, not by the length or id of what they make.
TEST(TokenizerBehaviour, BytePairMergesApplyInRankOrder) {
  VocabSpec spec;
  spec.model = "gpt2";
  spec.pre = "gpt-2";
  spec.tokens = {"a", "b", "c", "ab", "bc", "abc"};
  spec.merges = {"b c", "a b", "a bc"};
  std::vector<std::byte> storage;
  const Tokenizer first = Tokenizer::from_gguf(make_vocab_file(spec, storage));
  EXPECT_EQ(first.encode("abc", false, false), (std::vector<int32_t>{5}));
  spec.merges = {"a b", "b c", "a bc"};
  const Tokenizer second = Tokenizer::from_gguf(make_vocab_file(spec, storage));
  EXPECT_EQ(second.encode("abc", false, false), (std::vector<int32_t>{3, 2}));
}

void expect_load_error(const VocabSpec& spec, const std::string& key,
                       const std::vector<std::pair<std::string, gguf::Value>>& extra = {}) {
  std::vector<std::byte> storage;
  const gguf::GgufFile file = make_vocab_file(spec, storage, extra);
  try {
    Tokenizer::from_gguf(file);
    ADD_FAILURE() << "no error for a problem with " << key;
  } catch (const TokenizerError& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

TEST(TokenizerBehaviour, BadMetadataIsReportedWithItsKey) {
  VocabSpec good;
  good.tokens = {"<unk>", "<s>", "</s>", "a"};
  good.scores = {0, 0, 0, 0};
  std::vector<std::byte> storage;
  EXPECT_NO_THROW(Tokenizer::from_gguf(make_vocab_file(good, storage)));

  VocabSpec spec = good;
  spec.model = "unigram-of-the-future";
  expect_load_error(spec, "tokenizer.ggml.model");
  spec.model = "";
  expect_load_error(spec, "tokenizer.ggml.model");
  spec = good;
  spec.tokens = {};
  spec.scores = {};
  expect_load_error(spec, "tokenizer.ggml.tokens");
  spec = good;
  spec.tokens = {"<unk>", "<s>", "a", "a"};
  expect_load_error(spec, "tokenizer.ggml.tokens");
  spec = good;
  spec.scores = {0, 0};
  expect_load_error(spec, "tokenizer.ggml.scores");
  spec = good;
  spec.types = {1, 1, 1};
  expect_load_error(spec, "tokenizer.ggml.token_type");
  expect_load_error(good, "tokenizer.ggml.bos_token_id",
                    {{"tokenizer.ggml.bos_token_id", gguf::Value::u32(4)}});
  expect_load_error(good, "tokenizer.ggml.scores",
                    {{"tokenizer.ggml.scores", gguf::Value::string("not an array")}});
  // SentencePiece adds BOS by default, so a vocabulary without one is inconsistent.
  expect_load_error(good, "tokenizer.ggml.add_bos_token",
                    {{"tokenizer.ggml.bos_token_id", gguf::Value::u32(0xFFFFFFFF)}});
  spec = good;
  spec.model = "gpt2";
  spec.scores = {};
  expect_load_error(spec, "tokenizer.ggml.merges");
  spec.merges = {"a b"};
  spec.pre = "no-such-pre-tokenizer";
  expect_load_error(spec, "tokenizer.ggml.pre");
  spec.pre = "gpt-2";
  spec.merges = {"ab"};
  expect_load_error(spec, "tokenizer.ggml.merges");
}

TEST(TokenizerBehaviour, ConcurrentEncodesAgreeWithSerialOnes) {
  const std::optional<Tokenizer> tok =
      tokenizer_from_testdata("vocab/ggml-vocab-deepseek-llm.gguf");
  if (!tok) GTEST_SKIP() << "missing deepseek-llm vocabulary";
  std::vector<std::string> texts;
  for (int i = 0; i < 32; ++i) {
    texts.push_back("Line " + std::to_string(i) + ": Hello, y'all! 我想在apple工作 " +
                    std::to_string(i * 7919) + " Führer 🦙\n");
  }
  std::vector<std::vector<int32_t>> serial;
  for (const std::string& t : texts) serial.push_back(tok->encode(t, true, false));
  std::vector<std::vector<int32_t>> parallel(texts.size());
  auto work = [&](std::size_t first) {
    const Tokenizer copy = *tok;
    for (std::size_t i = first; i < texts.size(); i += 2) {
      parallel[i] = copy.encode(texts[i], true, false);
    }
  };
  std::thread a(work, 0);
  std::thread b(work, 1);
  a.join();
  b.join();
  EXPECT_EQ(parallel, serial);
}

}  // namespace
}  // namespace lamina::model::test

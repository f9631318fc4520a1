// llama.cpp's test-tokenizer-0 vectors: every string of each vocabulary's .inp must
// tokenize (no BOS/EOS, no special-token parsing) to exactly the ids of its .out line.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

#include "tokenizer_test_util.h"

namespace lamina::model::test {
namespace {

struct VectorCase {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<VectorCase> read_vectors(const std::filesystem::path& gguf_path) {
  static const std::string kSeparator = "\n__ggml_vocab_test__\n";
  const std::string inp = read_bytes(gguf_path.string() + ".inp");
  const std::string out = read_bytes(gguf_path.string() + ".out");
  std::vector<VectorCase> cases;
  for (std::size_t pos = 0; pos < inp.size();) {
    const std::size_t end = inp.find(kSeparator, pos);
    if (end == std::string::npos) break;
    cases.push_back({inp.substr(pos, end - pos), {}});
    pos = end + kSeparator.size();
  }
  std::istringstream lines(out);
  std::string line;
  for (VectorCase& c : cases) {
    if (!std::getline(lines, line)) break;
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
  }
  return cases;
}

class VocabVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabVectors, EveryStringTokenizesToTheReferenceIds) {
  const std::string file = "vocab/ggml-vocab-" + GetParam() + ".gguf";
  const std::optional<Tokenizer> tok = tokenizer_from_testdata(file);
  if (!tok) GTEST_SKIP() << "missing " << (testdata_dir() / file);
  const std::vector<VectorCase> cases = read_vectors(testdata_dir() / file);
  ASSERT_EQ(cases.size(), 46u) << "unexpected number of vectors in " << file;

  int passed = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::vector<int32_t> ids = tok->encode(cases[i].text, false, false);
    EXPECT_EQ(ids, cases[i].ids) << GetParam() << " string " << i << ": '" << cases[i].text << "'";
    passed += ids == cases[i].ids ? 1 : 0;
  }
  std::cout << "[ vectors  ] " << GetParam() << ": " << passed << "/" << cases.size()
            << " strings match\n";
}

// Byte-level BPE and SentencePiece with byte fallback lose nothing: decoding gives the
// text back (WordPiece lower-cases and drops accents, so it is not checked).
TEST_P(VocabVectors, DecodeRestoresEveryStringOfLosslessVocabularies) {
  const std::string file = "vocab/ggml-vocab-" + GetParam() + ".gguf";
  const std::optional<Tokenizer> tok = tokenizer_from_testdata(file);
  if (!tok) GTEST_SKIP() << "missing " << (testdata_dir() / file);
  if (tok->kind() == TokenizerKind::WordPiece) GTEST_SKIP() << "WordPiece is lossy";
  for (const VectorCase& c : read_vectors(testdata_dir() / file)) {
    const std::vector<int32_t> ids = tok->encode(c.text, false, false);
    EXPECT_EQ(tok->decode(ids), c.text) << GetParam();
    // With BOS/EOS added and special-token parsing on, the same holds.
    const std::vector<int32_t> with_special = tok->encode(c.text, true, true);
    EXPECT_EQ(tok->decode(with_special, {.render_special = false}), c.text) << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(Vocab, VocabVectors,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "deepseek-llm",
                                           "deepseek-coder", "falcon", "mpt", "starcoder",
                                           "refact", "bert-bge"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace lamina::model::test

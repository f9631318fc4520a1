// The tokenizers of the Hugging Face folders (their tokenizer.json pipelines, carried
// in the GGUF form as tokenizer.huggingface.json) against tokenizer-vectors.json
// (transformers' ids and decodes for 41 texts per folder).
#include <gtest/gtest.h>

#include <cstdio>

#include "hf_test_util.h"
#include "lamina/model/hf_model.h"
#include "lamina/model/tokenizer.h"
#include "tokenizer_reference_check.h"

namespace lamina::model {
namespace {

using namespace hf_test;

class HfTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(HfTokenizer, MatchesTransformersVectors) {
  const fs::path dir = hf_root() / GetParam();
  if (!fs::exists(dir / "tokenizer-vectors.json")) GTEST_SKIP() << "test data not found at " << dir;
  const gguf::GgufFile file = load_hf_model(dir);
  const Tokenizer tok = Tokenizer::from_gguf(file);
  const auto vectors = read_json(dir / "tokenizer-vectors.json")["vectors"];

  std::size_t passed = 0;
  for (const auto& v : vectors) {
    const reference_check::Expected e{v["text"],
                                      v["ids_with_special"],
                                      v["ids_no_special"],
                                      v["decoded_with_special"],
                                      v["decoded_with_special_skip_special"],
                                      v["decoded_no_special"]};
    const std::string label = GetParam() + " vector " + std::to_string(v["index"].get<int>());
    passed += reference_check::check(tok, e, label).all() ? 1 : 0;
  }
  RecordProperty("vectors_passed", std::to_string(passed) + "/" + std::to_string(vectors.size()));
  std::printf("%-10s tokenizer vectors: %zu/%zu exact\n", GetParam().c_str(), passed, vectors.size());
}

std::vector<std::string> tokenizer_dirs() {
  std::vector<std::string> dirs;
  for (const auto& d : hf_dirs()) {
    if (d != "qwen2-bf16") dirs.push_back(d);  // its tokenizer files are qwen2's
  }
  return dirs;
}

INSTANTIATE_TEST_SUITE_P(Folders, HfTokenizer, ::testing::ValuesIn(tokenizer_dirs()),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace lamina::model

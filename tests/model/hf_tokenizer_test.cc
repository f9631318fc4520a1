// The tokenizers of the Hugging Face folders, mapped to tokenizer.ggml.* and
// run by lamina's GGUF tokenizers, against tokenizer-vectors.json (transformers'
// ids and decodes for 41 texts per folder).
#include <gtest/gtest.h>

#include <cstdio>

#include "hf_test_util.h"
#include "lamina/model/hf_model.h"
#include "lamina/model/tokenizer.h"

namespace lamina::model {
namespace {

using namespace hf_test;

std::string show(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s.push_back(',');
    s.append(std::to_string(ids[i]));
  }
  s.push_back(']');
  return s;
}

class HfTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(HfTokenizer, MatchesTransformersVectors) {
  const fs::path dir = hf_root() / GetParam();
  if (!fs::exists(dir / "tokenizer-vectors.json")) GTEST_SKIP() << "test data not found at " << dir;
  const gguf::GgufFile file = load_hf_model(dir);
  const Tokenizer tok = Tokenizer::from_gguf(file);
  const auto vectors = read_json(dir / "tokenizer-vectors.json")["vectors"];

  const DecodeOptions keep_special{.render_special = true};
  const DecodeOptions skip_special{.render_special = false};
  std::size_t passed = 0;
  for (const auto& v : vectors) {
    const std::string text = v["text"];
    const auto with_special = tok.encode(text, /*add_special=*/true, /*parse_special=*/true);
    const auto no_special = tok.encode(text, /*add_special=*/false, /*parse_special=*/true);
    const auto want_with = v["ids_with_special"].get<std::vector<int32_t>>();
    const auto want_without = v["ids_no_special"].get<std::vector<int32_t>>();
    const std::string index = std::to_string(v["index"].get<int>());
    bool ok = true;
    auto check = [&](bool equal, const std::string& what, const std::string& detail) {
      EXPECT_TRUE(equal) << GetParam() << " vector " << index << ": " << what << "\n" << detail;
      ok = ok && equal;
    };
    check(with_special == want_with, "ids with special tokens", "got " + show(with_special) + "\nwant " + show(want_with));
    check(no_special == want_without, "ids without special tokens",
          "got " + show(no_special) + "\nwant " + show(want_without));
    const std::string d1 = tok.decode(want_with, keep_special), d2 = tok.decode(want_without, keep_special),
                      d3 = tok.decode(want_with, skip_special);
    check(d1 == v["decoded_with_special"], "decode with special tokens", "got '" + d1 + "'");
    check(d2 == v["decoded_no_special"], "decode without special tokens", "got '" + d2 + "'");
    check(d3 == v["decoded_with_special_skip_special"], "decode skipping special tokens", "got '" + d3 + "'");
    passed += ok ? 1 : 0;
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

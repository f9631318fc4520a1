// The synthetic tokenizers load in libmodel's GGUF tokenizer and encode and
// decode text: the vocabulary is usable, not only well-formed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/model/tokenizer.h"
#include "tool_runner.h"

namespace lamina::apps_test {
namespace {

const std::string kSynth = LAMINA_SYNTH_EXE;

TEST(SynthTokenizer, EncodesAndDecodesText) {
  ScratchDir dir("synth_tokenizer");
  for (const std::string preset : {"tiny", "tiny-llama"}) {
    SCOPED_TRACE(preset);
    const auto path = dir / (preset + ".gguf");
    const ToolResult r = run_tool(kSynth, {preset, path.string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto file = gguf::GgufFile::open(path);
    const auto tokenizer = model::Tokenizer::from_gguf(file);
    EXPECT_EQ(tokenizer.kind(), model::TokenizerKind::BytePairEncoding);
    EXPECT_EQ(tokenizer.n_vocab(), 1024);

    const std::string text =
        "The quick brown fox jumps over the lazy dog.\n  Ünïcödé, digits 12345,\ttabs and 🙂";
    const std::vector<int32_t> ids = tokenizer.encode(text, false, false);
    EXPECT_LT(ids.size(), text.size()) << "merges should join some bytes";
    EXPECT_EQ(tokenizer.decode(ids), text);

    // Special tokens in the text become their ids when asked to.
    const std::vector<int32_t> chat = tokenizer.encode("<|im_end|>hi", false, true);
    ASSERT_FALSE(chat.empty());
    EXPECT_EQ(chat.front(), tokenizer.eos_id());
  }
}

}  // namespace
}  // namespace lamina::apps_test

// Chat templates against transformers: every rendering in
// testdata/hf/*/chat-renderings.json must come out byte for byte, through
// ChatTemplate, through ModelChat, and from a GGUF model that carries the
// template; the built-in families stand in for templates that cannot be used.
#include "lamina/model/chat_template.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "lamina/gguf/writer.h"
#include "lamina/model/model.h"

namespace lamina::model {
namespace {

namespace fs = std::filesystem;
using Kind = ChatTemplateError::Kind;

const fs::path kTestdata = fs::path(LAMINA_TESTDATA_DIR);
const fs::path kHf = kTestdata / "hf";

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// One directory's template, special tokens, conversations and renderings.
struct HfChat {
  nlohmann::json doc;
  std::string bos, eos;
  std::map<std::string, std::vector<ChatMessage>> conversations;

  explicit HfChat(const fs::path& dir) : doc(read_json(dir / "chat-renderings.json")) {
    const auto cfg = read_json(dir / "tokenizer_config.json");
    const auto special = [&](const char* key) -> std::string {
      if (!cfg.contains(key) || cfg[key].is_null()) return {};
      return cfg[key].is_string() ? cfg[key].get<std::string>() : cfg[key]["content"].get<std::string>();
    };
    bos = special("bos_token");
    eos = special("eos_token");
    for (const auto& c : doc["conversations"]) {
      std::vector<ChatMessage> messages;
      for (const auto& m : c["messages"]) messages.push_back({m["role"], m["content"]});
      conversations[c["name"]] = messages;
    }
  }

  std::string chat_template() const { return doc["chat_template"].get<std::string>(); }

  ChatTemplateInputs inputs(const nlohmann::json& rendering) const {
    ChatTemplateInputs in;
    in.messages = conversations.at(rendering["conversation"]);
    in.add_generation_prompt = rendering["add_generation_prompt"];
    in.bos_token = bos;
    in.eos_token = eos;
    if (rendering.contains("extra_kwargs"))
      for (const auto& [k, v] : rendering["extra_kwargs"].items()) in.flags.emplace_back(k, v.get<bool>());
    return in;
  }
};

class HfChatRenderings : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!fs::exists(kHf / GetParam() / "chat-renderings.json")) GTEST_SKIP() << "test data not found at " << kHf;
    data_.emplace(kHf / GetParam());
  }
  std::optional<HfChat> data_;
};

TEST_P(HfChatRenderings, ChatTemplateMatchesTransformers) {
  const ChatTemplate t(data_->chat_template());
  std::size_t checked = 0;
  for (const auto& r : data_->doc["renderings"]) {
    EXPECT_EQ(t.render(data_->inputs(r)), r["text"].get<std::string>())
        << r["conversation"] << " add_generation_prompt=" << r["add_generation_prompt"];
    ++checked;
  }
  EXPECT_GE(checked, 8u);
}

TEST_P(HfChatRenderings, ModelChatMatchesTransformers) {
  const ModelChat chat(data_->chat_template(), data_->bos, data_->eos);
  EXPECT_TRUE(chat.has_template());
  EXPECT_TRUE(chat.uses_jinja());
  for (const auto& r : data_->doc["renderings"]) {
    const ChatTemplateInputs in = data_->inputs(r);
    EXPECT_EQ(chat.render(in.messages, in.add_generation_prompt, in.flags), r["text"].get<std::string>())
        << r["conversation"];
  }
}

INSTANTIATE_TEST_SUITE_P(Hf, HfChatRenderings,
                         ::testing::Values("llama", "llama-spm", "qwen2", "qwen3", "phi3", "gemma2", "mistral"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(HfChatRenderingsNoTemplate, Gpt2ReportsThatItHasNone) {
  if (!fs::exists(kHf / "gpt2" / "chat-renderings.json")) GTEST_SKIP() << "test data not found at " << kHf;
  const HfChat data(kHf / "gpt2");
  ASSERT_TRUE(data.doc["chat_template"].is_null());
  const ModelChat chat(std::nullopt, data.bos, data.eos);
  EXPECT_FALSE(chat.has_template());
  for (const auto& r : data.doc["renderings"]) {
    ASSERT_TRUE(r["text"].is_null());
    ASSERT_NE(r["error"].get<std::string>().find("chat_template is not set"), std::string::npos);
    try {
      chat.render(data.inputs(r).messages, r["add_generation_prompt"]);
      ADD_FAILURE() << "no error for a model without a template";
    } catch (const ChatTemplateError& e) {
      EXPECT_EQ(e.kind(), Kind::NoTemplate);
    }
  }
}

// The templates that require alternating roles reject other conversations
// with their own message, as transformers reports it.
TEST(HfChatRenderingsRejections, RolesMustAlternate) {
  const std::vector<ChatMessage> two_users = {{"user", "a"}, {"user", "b"}};
  for (const char* dir : {"llama-spm", "gemma2", "mistral"}) {
    if (!fs::exists(kHf / dir / "chat-renderings.json")) GTEST_SKIP() << "test data not found at " << kHf;
    const HfChat data(kHf / dir);
    try {
      ModelChat(data.chat_template(), data.bos, data.eos).render(two_users);
      ADD_FAILURE() << dir << " accepted two user turns in a row";
    } catch (const ChatTemplateError& e) {
      EXPECT_EQ(e.kind(), Kind::Raised) << dir;
      EXPECT_STREQ(e.what(), "Conversation roles must alternate user/assistant/user/assistant/...") << dir;
    }
  }
}

// Where the template needs something the renderer lacks, the built-in
// family of the same format renders instead (and matches transformers).
TEST(ModelChatFallback, BuiltInFamilyStandsInForUnusableTemplates) {
  if (!fs::exists(kHf / "qwen2" / "chat-renderings.json")) GTEST_SKIP() << "test data not found at " << kHf;
  const HfChat data(kHf / "qwen2");
  const ModelChat unsupported_filter("{{ '' | pprint }}" + data.chat_template(), data.bos, data.eos);
  const ModelChat unsupported_tag("{% call x() %}{% endcall %}" + data.chat_template(), data.bos, data.eos);
  EXPECT_TRUE(unsupported_filter.uses_jinja());
  EXPECT_FALSE(unsupported_tag.uses_jinja());
  for (const auto& r : data.doc["renderings"]) {
    const ChatTemplateInputs in = data.inputs(r);
    EXPECT_EQ(unsupported_filter.render(in.messages, in.add_generation_prompt), r["text"].get<std::string>());
    EXPECT_EQ(unsupported_tag.render(in.messages, in.add_generation_prompt), r["text"].get<std::string>());
  }
}

TEST(ModelChatFallback, UnknownBrokenTemplateIsAnError) {
  const ModelChat chat("{% if %}<custom>", "", "");
  try {
    chat.render({{"user", "hi"}});
    ADD_FAILURE() << "a broken template of no known family rendered";
  } catch (const ChatTemplateError& e) {
    EXPECT_EQ(e.kind(), Kind::Syntax);
    EXPECT_STREQ(e.what(),
                 "chat template 1:7: expected an expression, got end of statement block '%}' (and the template is "
                 "none of the built-in chat formats)");
  }
}

// A copy of a test model with `chat_template` added to its metadata.
fs::path with_chat_template(const fs::path& source, const std::string& chat_template) {
  const gguf::GgufFile file = gguf::GgufFile::open(source);
  gguf::GgufWriter writer;
  writer.copy_metadata_from(file);
  writer.set("tokenizer.chat_template", gguf::Value::string(chat_template));
  for (const gguf::TensorInfo& t : file.tensors()) writer.add_tensor_view(t.name, t.type, t.shape(), t.data);
  const fs::path out = fs::temp_directory_path() / ("lamina-chat-template-" + std::to_string(getpid()) + ".gguf");
  writer.write_file(out);
  return out;
}

TEST(ModelChatGguf, RendersTheTemplateStoredInTheModel) {
  const fs::path gguf_path = kTestdata / "archs" / "qwen2.f32.gguf";
  if (!fs::exists(gguf_path) || !fs::exists(kHf / "qwen3" / "chat-renderings.json"))
    GTEST_SKIP() << "test data not found at " << kTestdata;
  const HfChat data(kHf / "qwen3");
  const fs::path path = with_chat_template(gguf_path, data.chat_template());
  LoadOptions options;
  options.prefault = false;
  const auto model = Model::load(path, options);
  fs::remove(path);
  const ModelChat chat(*model);
  ASSERT_TRUE(chat.uses_jinja());
  for (const auto& r : data.doc["renderings"]) {
    const ChatTemplateInputs in = data.inputs(r);
    EXPECT_EQ(chat.render(in.messages, in.add_generation_prompt, in.flags), r["text"].get<std::string>());
  }
}

TEST(ModelChatGguf, ModelWithoutTemplateIsAClearError) {
  const fs::path gguf_path = kTestdata / "archs" / "llama.f32.gguf";
  if (!fs::exists(gguf_path)) GTEST_SKIP() << "test data not found at " << gguf_path;
  LoadOptions options;
  options.prefault = false;
  const auto model = Model::load(gguf_path, options);
  ASSERT_EQ(model->file().find("tokenizer.chat_template"), nullptr);
  const ModelChat chat(*model);
  EXPECT_FALSE(chat.has_template());
  try {
    chat.render({{"user", "hi"}});
    ADD_FAILURE() << "rendered without a template";
  } catch (const ChatTemplateError& e) {
    EXPECT_EQ(e.kind(), Kind::NoTemplate);
    EXPECT_STREQ(e.what(), "the model has no chat template (tokenizer.chat_template)");
  }
}

}  // namespace
}  // namespace lamina::model

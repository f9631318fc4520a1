// The one chat-prompt policy of lamina/model/chat_prompt.h: the model's
// template; ChatML, said so, when it has none; a family chosen by name.
#include <gtest/gtest.h>

#include <stdexcept>

#include "engine_test_util.h"
#include "lamina/model/chat.h"
#include "lamina/model/chat_prompt.h"

namespace lamina::model::engine_test {
namespace {

const std::vector<ChatMessage> kConversation = {{"system", "Be brief."}, {"user", "Once upon a time"}};

std::string piece(const Tokenizer& tok, int32_t id) { return id >= 0 ? tok.token_to_piece(id) : std::string(); }

TEST(ChatPrompt, AModelWithoutATemplateGetsChatMlAndSaysSo) {
  LAMINA_REQUIRE_MODEL();
  ASSERT_FALSE(ModelChat(model).has_template()) << "the test model is expected to have no chat template";
  const ChatPrompt chat(model);
  EXPECT_FALSE(chat.follows_model());
  EXPECT_EQ(chat.description(), "chatml (the model has no chat template)");
  const Tokenizer& tok = model.tokenizer();
  const std::string text = render_chat(*chat_format_by_name("chatml"), kConversation, true, piece(tok, tok.bos_id()),
                                       piece(tok, tok.eos_id()));
  EXPECT_EQ(chat.render(kConversation), text);
  std::vector<int32_t> ids = tok.encode(text, /*add_special=*/false, /*parse_special=*/true);
  if (tok.add_bos() && tok.bos_id() >= 0 && (ids.empty() || ids.front() != tok.bos_id()))
    ids.insert(ids.begin(), tok.bos_id());
  EXPECT_EQ(chat.prompt_ids(kConversation), ids);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), tok.bos_id()) << "the BOS token the template does not write is added";
}

TEST(ChatPrompt, AFamilyByNameReplacesTheModelsTemplate) {
  LAMINA_REQUIRE_MODEL();
  const ChatPrompt chat(model, "llama3");
  EXPECT_TRUE(chat.follows_model());
  EXPECT_EQ(chat.description(), "llama3 (chosen by name)");
  const Tokenizer& tok = model.tokenizer();
  ChatRenderOptions no_generation_prompt;
  no_generation_prompt.add_generation_prompt = false;
  EXPECT_EQ(chat.render(kConversation, no_generation_prompt),
            render_chat(*chat_format_by_name("llama3"), kConversation, false, piece(tok, tok.bos_id()),
                        piece(tok, tok.eos_id())));
}

TEST(ChatPrompt, AnUnknownFamilyIsAnErrorNamingIt) {
  LAMINA_REQUIRE_MODEL();
  try {
    ChatPrompt chat(model, "banana");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'banana'"), std::string::npos) << e.what();
  }
}

TEST(ChatPrompt, TurnsAFamilyRefusesAreAnInvalidArgument) {
  LAMINA_REQUIRE_MODEL();
  const ChatPrompt chat(model, "llama2");
  EXPECT_THROW(chat.render({{"user", "a"}, {"user", "b"}}), std::invalid_argument);
}

}  // namespace
}  // namespace lamina::model::engine_test

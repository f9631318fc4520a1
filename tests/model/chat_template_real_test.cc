// Real chat templates as models ship them (Llama 3.3, Qwen3, Qwen3-VL with
// macros, Qwen2.5, Gemma 2, Mistral v0.2, Llama 2, Phi-3), rendered for a few
// conversations. The expected texts are what transformers' template setup
// (jinja2 3.1 with trim_blocks, lstrip_blocks and loop controls, its own
// |tojson and raise_exception) produces for the same inputs; a template that
// rejects a conversation must fail with the same message.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "chat_template_real_templates.h"
#include "lamina/model/chat_template.h"

namespace lamina::model {
namespace {

struct RealTemplate {
  const char* source;
  const char* bos;
  const char* eos;
};

const std::map<std::string, RealTemplate>& templates() {
  static const std::map<std::string, RealTemplate> kTemplates = {
      {"Llama33", {real_templates::kLlama33, "<|begin_of_text|>", "<|eot_id|>"}},
      {"Qwen3", {real_templates::kQwen3, "", "<|im_end|>"}},
      {"Qwen3VlMacros", {real_templates::kQwen3VlMacros, "", "<|im_end|>"}},
      {"Qwen25", {real_templates::kQwen25, "", "<|im_end|>"}},
      {"Gemma2", {real_templates::kGemma2, "<bos>", "<eos>"}},
      {"MistralV02", {real_templates::kMistralV02, "<s>", "</s>"}},
      {"Llama2", {real_templates::kLlama2, "<s>", "</s>"}},
      {"Phi3", {real_templates::kPhi3, "<s>", "<|endoftext|>"}},
  };
  return kTemplates;
}

const std::map<std::string, std::vector<ChatMessage>>& conversations() {
  static const std::map<std::string, std::vector<ChatMessage>> kConversations = {
      {"SystemUser", {{"system", "  You are terse.\n"}, {"user", "What is 2+2?"}}},
      {"UserOnly", {{"user", "Hello! A haiku about the sea, please. 🌊"}}},
      {"MultiTurn",
       {{"user", "Hi"},
        {"assistant", "<think>\nThe user greets.\n</think>\n\nHello! How can I help?"},
        {"user", "Tell me a joke."},
        {"assistant", "<think>keep it short</think>Why did the chicken cross the road?"},
        {"user", " Why? "}}},
      {"SystemMultiTurn",
       {{"system", "Answer in French."}, {"user", "Good morning"}, {"assistant", "Bonjour !"}, {"user", "Thanks\n\n"}}},
  };
  return kConversations;
}

struct Expected {
  const char* template_name;
  const char* conversation;
  bool add_generation_prompt;
  bool thinking_off;  // enable_thinking=False
  const char* text;   // null when the template raises
  const char* raised;
};

const Expected kExpected[] = {
    {"Llama33", "SystemUser", true, false,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nTo"
     "day Date: 26 Jul 2024\n\nYou are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2"
     "?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
     nullptr},
    {"Llama33", "UserOnly", true, false,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nTo"
     "day Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello! A haiku about the "
     "sea, please. 🌊<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
     nullptr},
    {"Llama33", "MultiTurn", true, false,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nTo"
     "day Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_heade"
     "r_id|>assistant<|end_header_id|>\n\n<think>\nThe user greets.\n</think>\n\nHello! How can I help?<|eot_i"
     "d|><|start_header_id|>user<|end_header_id|>\n\nTell me a joke.<|eot_id|><|start_header_id|>assistant<|en"
     "d_header_id|>\n\n<think>keep it short</think>Why did the chicken cross the road?<|eot_id|><|start_header"
     "_id|>user<|end_header_id|>\n\nWhy?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
     nullptr},
    {"Llama33", "MultiTurn", false, false,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nTo"
     "day Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_heade"
     "r_id|>assistant<|end_header_id|>\n\n<think>\nThe user greets.\n</think>\n\nHello! How can I help?<|eot_i"
     "d|><|start_header_id|>user<|end_header_id|>\n\nTell me a joke.<|eot_id|><|start_header_id|>assistant<|en"
     "d_header_id|>\n\n<think>keep it short</think>Why did the chicken cross the road?<|eot_id|><|start_header"
     "_id|>user<|end_header_id|>\n\nWhy?<|eot_id|>",
     nullptr},
    {"Llama33", "SystemMultiTurn", true, false,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nTo"
     "day Date: 26 Jul 2024\n\nAnswer in French.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nGood mor"
     "ning<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nBonjour !<|eot_id|><|start_header_id|>use"
     "r<|end_header_id|>\n\nThanks<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
     nullptr},
    {"Qwen3", "SystemUser", true, false,
     "<|im_start|>system\n  You are terse.\n<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>"
     "assistant\n",
     nullptr},
    {"Qwen3", "SystemUser", true, true,
     "<|im_start|>system\n  You are terse.\n<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>"
     "assistant\n<think>\n\n</think>\n\n",
     nullptr},
    {"Qwen3", "UserOnly", true, false,
     "<|im_start|>user\nHello! A haiku about the sea, please. 🌊<|im_end|>\n<|im_start|>assistant\n", nullptr},
    {"Qwen3", "UserOnly", true, true,
     "<|im_start|>user\nHello! A haiku about the sea, please. 🌊<|im_end|>\n<|im_start|>assistant\n<think>\n\n<"
     "/think>\n\n",
     nullptr},
    {"Qwen3", "MultiTurn", true, false,
     "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello! How can I help?<|im_end|>\n<|im_start|>use"
     "r\nTell me a joke.<|im_end|>\n<|im_start|>assistant\nWhy did the chicken cross the road?<|im_end|>\n<|im"
     "_start|>user\n Why? <|im_end|>\n<|im_start|>assistant\n",
     nullptr},
    {"Qwen3", "MultiTurn", false, false,
     "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello! How can I help?<|im_end|>\n<|im_start|>use"
     "r\nTell me a joke.<|im_end|>\n<|im_start|>assistant\nWhy did the chicken cross the road?<|im_end|>\n<|im"
     "_start|>user\n Why? <|im_end|>\n",
     nullptr},
    {"Qwen3", "MultiTurn", true, true,
     "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello! How can I help?<|im_end|>\n<|im_start|>use"
     "r\nTell me a joke.<|im_end|>\n<|im_start|>assistant\nWhy did the chicken cross the road?<|im_end|>\n<|im"
     "_start|>user\n Why? <|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
     nullptr},
    {"Qwen3", "SystemMultiTurn", true, false,
     "<|im_start|>system\nAnswer in French.<|im_end|>\n<|im_start|>user\nGood morning<|im_end|>\n<|im_start|>a"
     "ssistant\nBonjour !<|im_end|>\n<|im_start|>user\nThanks\n\n<|im_end|>\n<|im_start|>assistant\n",
     nullptr},
    {"Qwen3", "SystemMultiTurn", true, true,
     "<|im_start|>system\nAnswer in French.<|im_end|>\n<|im_start|>user\nGood morning<|im_end|>\n<|im_start|>a"
     "ssistant\nBonjour !<|im_end|>\n<|im_start|>user\nThanks\n\n<|im_end|>\n<|im_start|>assistant\n<think>\n"
     "\n</think>\n\n",
     nullptr},
    {"Qwen3VlMacros", "SystemUser", true, false,
     "<|im_start|>system\n  You are terse.\n<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>"
     "assistant\n<think>\n",
     nullptr},
    {"Qwen3VlMacros", "SystemUser", true, true,
     "<|im_start|>system\n  You are terse.\n<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>"
     "assistant\n<think>\n",
     nullptr},
    {"Qwen3VlMacros", "UserOnly", true, false,
     "<|im_start|>user\nHello! A haiku about the sea, please. 🌊<|im_end|>\n<|im_start|>assistant\n<think>\n", nullptr},
    {"Qwen3VlMacros", "UserOnly", true, true,
     "<|im_start|>user\nHello! A haiku about the sea, please. 🌊<|im_end|>\n<|im_start|>assistant\n<think>\n", nullptr},
    {"Qwen3VlMacros", "MultiTurn", true, false,
     "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello! How can I help?<|im_end|>\n<|im_start|>use"
     "r\nTell me a joke.<|im_end|>\n<|im_start|>assistant\nWhy did the chicken cross the road?<|im_end|>\n<|im"
     "_start|>user\n Why? <|im_end|>\n<|im_start|>assistant\n<think>\n",
     nullptr},
    {"Qwen3VlMacros", "MultiTurn", false, false,
     "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello! How can I help?<|im_end|>\n<|im_start|>use"
     "r\nTell me a joke.<|im_end|>\n<|im_start|>assistant\nWhy did the chicken cross the road?<|im_end|>\n<|im"
     "_start|>user\n Why? <|im_end|>\n",
     nullptr},
    {"Qwen3VlMacros", "MultiTurn", true, true,
     "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello! How can I help?<|im_end|>\n<|im_start|>use"
     "r\nTell me a joke.<|im_end|>\n<|im_start|>assistant\nWhy did the chicken cross the road?<|im_end|>\n<|im"
     "_start|>user\n Why? <|im_end|>\n<|im_start|>assistant\n<think>\n",
     nullptr},
    {"Qwen3VlMacros", "SystemMultiTurn", true, false,
     "<|im_start|>system\nAnswer in French.<|im_end|>\n<|im_start|>user\nGood morning<|im_end|>\n<|im_start|>a"
     "ssistant\nBonjour !<|im_end|>\n<|im_start|>user\nThanks\n\n<|im_end|>\n<|im_start|>assistant\n<think>\n",
     nullptr},
    {"Qwen3VlMacros", "SystemMultiTurn", true, true,
     "<|im_start|>system\nAnswer in French.<|im_end|>\n<|im_start|>user\nGood morning<|im_end|>\n<|im_start|>a"
     "ssistant\nBonjour !<|im_end|>\n<|im_start|>user\nThanks\n\n<|im_end|>\n<|im_start|>assistant\n<think>\n",
     nullptr},
    {"Qwen25", "SystemUser", true, false,
     "<|im_start|>system\n  You are terse.\n<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>"
     "assistant\n",
     nullptr},
    {"Qwen25", "UserOnly", true, false,
     "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im"
     "_start|>user\nHello! A haiku about the sea, please. 🌊<|im_end|>\n<|im_start|>assistant\n",
     nullptr},
    {"Qwen25", "MultiTurn", true, false,
     "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im"
     "_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nThe user greets.\n</think>\n\nHello! How can"
     " I help?<|im_end|>\n<|im_start|>user\nTell me a joke.<|im_end|>\n<|im_start|>assistant\n<think>keep it s"
     "hort</think>Why did the chicken cross the road?<|im_end|>\n<|im_start|>user\n Why? <|im_end|>\n<|im_star"
     "t|>assistant\n",
     nullptr},
    {"Qwen25", "MultiTurn", false, false,
     "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im"
     "_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nThe user greets.\n</think>\n\nHello! How can"
     " I help?<|im_end|>\n<|im_start|>user\nTell me a joke.<|im_end|>\n<|im_start|>assistant\n<think>keep it s"
     "hort</think>Why did the chicken cross the road?<|im_end|>\n<|im_start|>user\n Why? <|im_end|>\n",
     nullptr},
    {"Qwen25", "SystemMultiTurn", true, false,
     "<|im_start|>system\nAnswer in French.<|im_end|>\n<|im_start|>user\nGood morning<|im_end|>\n<|im_start|>a"
     "ssistant\nBonjour !<|im_end|>\n<|im_start|>user\nThanks\n\n<|im_end|>\n<|im_start|>assistant\n",
     nullptr},
    {"Gemma2", "SystemUser", true, false, nullptr, "System role not supported"},
    {"Gemma2", "UserOnly", true, false,
     "<bos><start_of_turn>user\nHello! A haiku about the sea, please. 🌊<end_of_turn>\n<start_of_turn>model\n", nullptr},
    {"Gemma2", "MultiTurn", true, false,
     "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n<think>\nThe user greets.\n</think>\n\n"
     "Hello! How can I help?<end_of_turn>\n<start_of_turn>user\nTell me a joke.<end_of_turn>\n<start_of_turn>m"
     "odel\n<think>keep it short</think>Why did the chicken cross the road?<end_of_turn>\n<start_of_turn>user"
     "\nWhy?<end_of_turn>\n<start_of_turn>model\n",
     nullptr},
    {"Gemma2", "MultiTurn", false, false,
     "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n<think>\nThe user greets.\n</think>\n\n"
     "Hello! How can I help?<end_of_turn>\n<start_of_turn>user\nTell me a joke.<end_of_turn>\n<start_of_turn>m"
     "odel\n<think>keep it short</think>Why did the chicken cross the road?<end_of_turn>\n<start_of_turn>user"
     "\nWhy?<end_of_turn>\n",
     nullptr},
    {"Gemma2", "SystemMultiTurn", true, false, nullptr, "System role not supported"},
    {"MistralV02", "SystemUser", true, false, nullptr,
     "Conversation roles must alternate user/assistant/user/assistant/..."},
    {"MistralV02", "UserOnly", true, false, "<s>[INST] Hello! A haiku about the sea, please. 🌊 [/INST]", nullptr},
    {"MistralV02", "MultiTurn", true, false,
     "<s>[INST] Hi [/INST]<think>\nThe user greets.\n</think>\n\nHello! How can I help?</s>[INST] Tell me a jo"
     "ke. [/INST]<think>keep it short</think>Why did the chicken cross the road?</s>[INST]  Why?  [/INST]",
     nullptr},
    {"MistralV02", "MultiTurn", false, false,
     "<s>[INST] Hi [/INST]<think>\nThe user greets.\n</think>\n\nHello! How can I help?</s>[INST] Tell me a jo"
     "ke. [/INST]<think>keep it short</think>Why did the chicken cross the road?</s>[INST]  Why?  [/INST]",
     nullptr},
    {"MistralV02", "SystemMultiTurn", true, false, nullptr,
     "Conversation roles must alternate user/assistant/user/assistant/..."},
    {"Llama2", "SystemUser", true, false, "<s>[INST] <<SYS>>\n  You are terse.\n\n<</SYS>>\n\nWhat is 2+2? [/INST]",
     nullptr},
    {"Llama2", "UserOnly", true, false, "<s>[INST] Hello! A haiku about the sea, please. 🌊 [/INST]", nullptr},
    {"Llama2", "MultiTurn", true, false,
     "<s>[INST] Hi [/INST] <think>\nThe user greets.\n</think>\n\nHello! How can I help? </s><s>[INST] Tell me"
     " a joke. [/INST] <think>keep it short</think>Why did the chicken cross the road? </s><s>[INST] Why? [/IN"
     "ST]",
     nullptr},
    {"Llama2", "MultiTurn", false, false,
     "<s>[INST] Hi [/INST] <think>\nThe user greets.\n</think>\n\nHello! How can I help? </s><s>[INST] Tell me"
     " a joke. [/INST] <think>keep it short</think>Why did the chicken cross the road? </s><s>[INST] Why? [/IN"
     "ST]",
     nullptr},
    {"Llama2", "SystemMultiTurn", true, false,
     "<s>[INST] <<SYS>>\nAnswer in French.\n<</SYS>>\n\nGood morning [/INST] Bonjour ! </s><s>[INST] Thanks [/"
     "INST]",
     nullptr},
    {"Phi3", "SystemUser", true, false,
     "<|system|>\n  You are terse.\n<|end|>\n<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n", nullptr},
    {"Phi3", "UserOnly", true, false, "<|user|>\nHello! A haiku about the sea, please. 🌊<|end|>\n<|assistant|>\n",
     nullptr},
    {"Phi3", "MultiTurn", true, false,
     "<|user|>\nHi<|end|>\n<|assistant|>\n<think>\nThe user greets.\n</think>\n\nHello! How can I help?<|end|>"
     "\n<|user|>\nTell me a joke.<|end|>\n<|assistant|>\n<think>keep it short</think>Why did the chicken cross"
     " the road?<|end|>\n<|user|>\n Why? <|end|>\n<|assistant|>\n",
     nullptr},
    {"Phi3", "MultiTurn", false, false,
     "<|user|>\nHi<|end|>\n<|assistant|>\n<think>\nThe user greets.\n</think>\n\nHello! How can I help?<|end|>"
     "\n<|user|>\nTell me a joke.<|end|>\n<|assistant|>\n<think>keep it short</think>Why did the chicken cross"
     " the road?<|end|>\n<|user|>\n Why? <|end|>\n<|endoftext|>",
     nullptr},
    {"Phi3", "SystemMultiTurn", true, false,
     "<|system|>\nAnswer in French.<|end|>\n<|user|>\nGood morning<|end|>\n<|assistant|>\nBonjour !<|end|>\n<|"
     "user|>\nThanks\n\n<|end|>\n<|assistant|>\n",
     nullptr},
};

TEST(RealChatTemplates, RenderAsTransformers) {
  std::map<std::string, ChatTemplate> parsed;
  for (const auto& [name, t] : templates()) parsed.emplace(name, ChatTemplate(t.source));
  for (const Expected& e : kExpected) {
    const RealTemplate& t = templates().at(e.template_name);
    ChatTemplateInputs in;
    in.messages = conversations().at(e.conversation);
    in.add_generation_prompt = e.add_generation_prompt;
    in.bos_token = t.bos;
    in.eos_token = t.eos;
    if (e.thinking_off) in.flags = {{"enable_thinking", false}};
    const std::string what = std::string(e.template_name) + " / " + e.conversation +
                             (e.add_generation_prompt ? " / generation prompt" : "") +
                             (e.thinking_off ? " / thinking off" : "");
    if (e.text) {
      EXPECT_EQ(parsed.at(e.template_name).render(in), e.text) << what;
      continue;
    }
    try {
      parsed.at(e.template_name).render(in);
      ADD_FAILURE() << what << ": rendered, but the template rejects this conversation";
    } catch (const ChatTemplateError& err) {
      EXPECT_EQ(err.kind(), ChatTemplateError::Kind::Raised) << what;
      EXPECT_STREQ(err.what(), e.raised) << what;
    }
  }
}

// The same template rendered from several threads at once gives the same text.
TEST(RealChatTemplates, RenderIsThreadSafe) {
  const ChatTemplate t(templates().at("Qwen3").source);
  ChatTemplateInputs in;
  in.messages = conversations().at("MultiTurn");
  const std::string expected = t.render(in);
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 200; ++k) mismatches[static_cast<std::size_t>(i)] += t.render(in) != expected;
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

}  // namespace
}  // namespace lamina::model

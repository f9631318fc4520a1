// The pre-tokenizer regexes per tokenizer.ggml.pre value. They are the sets llama.cpp
// (src/llama-vocab.cpp) uses for each name, which follow each model's tokenizer.json
// with case-insensitive groups spelled out; the token ids of the reference vectors
// depend on them. Non-ASCII characters are written as \x{...} escapes: several (the
// Kelvin and Ohm signs, Greek letters with oxia) change under Unicode normalisation,
// which an editor may apply to literal text.
#include <array>
#include <string_view>
#include <utility>

#include "tokenizer/pre_tokenizer.h"

namespace lamina::model::detail {

namespace {

using namespace std::string_view_literals;

// GPT-2's word pattern; several vocabularies apply it after their own splits.
constexpr std::string_view kGpt2Words =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"sv;

constexpr std::array kDefault = {
    "[\\p{P}\\$\\+<=>\\^~\\|]+"sv,
    kGpt2Words,
    "\\p{N}+"sv,
    "[0-9][0-9][0-9]"sv,
};

constexpr std::array kGpt2 = {kGpt2Words};

constexpr std::array kLlama3 = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"sv,
};

constexpr std::array kQwen2 = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"sv,
};

// Mistral's Tekken: words split at case changes, single digits.
constexpr std::array kTekken = {
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"sv,
};

// OpenAI's o200k (GPT-4o, gpt-oss): tokenizer.json's own pattern, which PCRE2 runs as
// written.
constexpr std::array kGpt4o = {
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"sv,
};

// DeepSeek V3: digits in threes, CJK kana and ideograph runs, then words.
constexpr std::array kDeepseekV3 = {
    "\\p{N}{1,3}"sv,
    "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+"sv,
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
    " ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"sv,
};

constexpr std::array kDeepseekLlm = {
    "[\\r\\n]"sv,
    "\\s?["
    "A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
    "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}"
    "\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}"
    "\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}"
    "\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}"
    "\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}"
    "\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}"
    "\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}"
    "\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}"
    "\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}"
    "\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}"
    "\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}"
    "\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}"
    "\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}"
    "\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}"
    "\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}"
    "\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"
    "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}"
    "\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}"
    "]+"sv,
    "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+"sv,
    "\\s+$"sv,
    "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"sv,
    "\\p{N}+"sv,
};

constexpr std::array kDeepseekCoder = {
    "[\\r\\n]"sv,
    "\\s?\\p{L}+"sv,
    "\\s?\\p{P}+"sv,
    "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"sv,
    "\\p{N}"sv,
};

constexpr std::array kFalcon = {
    "[\\p{P}\\$\\+<=>\\^~\\|`]+"sv,
    kGpt2Words,
    "[0-9][0-9][0-9]"sv,
};

// StarCoder and its relatives split every digit first.
constexpr std::array kStarcoder = {
    "\\p{N}"sv,
    kGpt2Words,
};

constexpr std::array kBloom = {
    " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+"sv,
};

constexpr std::array kViking = {
    " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+"sv,
    "\\p{N}"sv,
};

struct NamedRules {
  std::string_view name;
  PreTokenizerRules rules;
};

constexpr PreTokenizerRules rules_of(std::span<const std::string_view> patterns,
                                     bool ignore_merges = false, bool add_bos = false, bool nfc = false) {
  return PreTokenizerRules{patterns, ignore_merges, add_bos, nfc};
}

const std::array kRules = {
    NamedRules{"default", rules_of(kDefault)},
    NamedRules{"llama3", rules_of(kLlama3, true, true)},
    NamedRules{"llama-v3", rules_of(kLlama3, true, true)},
    NamedRules{"llama-bpe", rules_of(kLlama3, true, true)},
    NamedRules{"falcon3", rules_of(kLlama3, true, true)},
    NamedRules{"dbrx", rules_of(kLlama3)},
    NamedRules{"smaug-bpe", rules_of(kLlama3)},
    NamedRules{"deepseek-llm", rules_of(kDeepseekLlm)},
    NamedRules{"deepseek-coder", rules_of(kDeepseekCoder)},
    NamedRules{"falcon", rules_of(kFalcon)},
    NamedRules{"gpt-2", rules_of(kGpt2)},
    NamedRules{"phi-2", rules_of(kGpt2)},
    NamedRules{"mpt", rules_of(kGpt2)},
    NamedRules{"olmo", rules_of(kGpt2)},
    NamedRules{"jais", rules_of(kGpt2)},
    NamedRules{"roberta-bpe", rules_of(kGpt2)},
    NamedRules{"starcoder", rules_of(kStarcoder)},
    NamedRules{"refact", rules_of(kStarcoder)},
    NamedRules{"command-r", rules_of(kStarcoder)},
    NamedRules{"smollm", rules_of(kStarcoder)},
    NamedRules{"codeshell", rules_of(kStarcoder)},
    NamedRules{"exaone", rules_of(kStarcoder)},
    NamedRules{"minerva-7b", rules_of(kStarcoder)},
    NamedRules{"tekken", rules_of(kTekken, true, true)},
    NamedRules{"qwen2", rules_of(kQwen2, false, false, true)},
    NamedRules{"deepseek-r1-qwen", rules_of(kQwen2, false, false, true)},
    NamedRules{"gpt-4o", rules_of(kGpt4o, true)},
    NamedRules{"deepseek-v3", rules_of(kDeepseekV3, false, true)},
    NamedRules{"stablelm2", rules_of(kQwen2)},
    NamedRules{"poro-chat", rules_of(kBloom)},
    NamedRules{"bloom", rules_of(kBloom)},
    NamedRules{"gpt3-finnish", rules_of(kBloom)},
    NamedRules{"viking", rules_of(kViking)},
};

}  // namespace

const PreTokenizerRules* find_pre_tokenizer_rules(std::string_view pre) {
  for (const NamedRules& r : kRules) {
    if (r.name == pre) return &r.rules;
  }
  return nullptr;
}

}  // namespace lamina::model::detail

#include "lamina/model/tokenizer.h"

#include <algorithm>
#include <optional>

#include "lamina/gguf/file.h"
#include "tokenizer/decoding.h"
#include "tokenizer/encoders.h"
#include "tokenizer/hf/hf_tokenizer.h"
#include "tokenizer/metadata.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocabulary.h"
#include "utf8.h"

namespace lamina::model {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // '▁'

std::string replace_space_marks(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    if (text.substr(pos, kSpaceMark.size()) == kSpaceMark) {
      out += ' ';
      pos += kSpaceMark.size();
    } else {
      out += text[pos++];
    }
  }
  return out;
}

std::string decode_byte_level(std::string_view text) {
  std::string out;
  for (char32_t cp : detail::decode_utf8_lossy(text)) {
    const int byte = detail::unicode_to_byte(cp);
    if (byte >= 0) {
      out += static_cast<char>(byte);
    } else {
      utf8::append(out, cp);
    }
  }
  return out;
}

// "<0xNN>" -> the byte NN.
std::optional<char> parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(text[3]);
  const int lo = hex(text[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<char>(hi * 16 + lo);
}

std::string render_piece(const detail::Vocabulary& v, int32_t id) {
  const std::string_view text = v.texts[static_cast<std::size_t>(id)];
  switch (v.type(id)) {
    case TokenType::Normal:
      return v.kind == TokenizerKind::BytePairEncoding ? decode_byte_level(text)
                                                       : replace_space_marks(text);
    case TokenType::Byte:
      if (const std::optional<char> byte = parse_byte_token(text)) return std::string(1, *byte);
      return std::string(text);
    case TokenType::UserDefined:
      // Hugging Face's SentencePiece decoders turn '▁' into spaces in added tokens too.
      return v.kind == TokenizerKind::SentencePiece ? replace_space_marks(text) : std::string(text);
    case TokenType::Control:
    case TokenType::Unknown:
      return std::string(text);
    case TokenType::Unused:
    case TokenType::Undefined:
      break;
  }
  return {};
}

constexpr std::string_view kHfJsonKey = "tokenizer.huggingface.json";

// A token's piece through the Hugging Face decoder, as it reads in the middle of a text.
std::string render_hf_piece(const detail::hf::HfTokenizer& hf, int32_t id) {
  if (!hf.token(id)) return {};  // a padding id past the tokenizer's own tokens
  const int32_t one[] = {id};
  return hf.decode(one, false, {.continuation = true, .raw_bytes = true});
}

// The bytes std::isspace accepts in the C locale, which llama.cpp strips after a token.
bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// SentencePiece sees spaces as '▁', and a text run may get one more in front.
void escape_spaces(std::string_view text, bool add_prefix, std::string& out) {
  out.clear();
  if (add_prefix) out += kSpaceMark;
  for (char c : text) {
    if (c == ' ') {
      out += kSpaceMark;
    } else {
      out += c;
    }
  }
}

}  // namespace

struct Tokenizer::Impl {
  Impl(detail::Vocabulary vocabulary, std::unique_ptr<const detail::hf::HfTokenizer> pipeline)
      : vocab(std::move(vocabulary)), specials(vocab), hf(std::move(pipeline)) {
    pieces.reserve(static_cast<std::size_t>(vocab.size()), 0);
    for (int32_t id = 0; id < vocab.size(); ++id) pieces.push_back(hf ? render_hf_piece(*hf, id) : render_piece(vocab, id));
    pieces.shrink_to_fit();
  }

  detail::Vocabulary vocab;
  detail::SpecialTokenSplitter specials;
  std::optional<detail::BpeModel> bpe;
  std::unique_ptr<const detail::hf::HfTokenizer> hf;  // encodes and decodes when present
  detail::StringTable pieces;  // token_to_piece(id, render_special = true)
};

Tokenizer Tokenizer::from_gguf(const gguf::GgufFile& file) {
  std::unique_ptr<const detail::hf::HfTokenizer> hf;
  if (const std::optional<std::string> json = detail::optional_string(file, kHfJsonKey)) {
    hf = std::make_unique<const detail::hf::HfTokenizer>(*json);
  }
  detail::Vocabulary vocab = detail::load_vocabulary(file, hf != nullptr);
  if (hf) {
    // The metadata's token list may be longer (padding rows), never different.
    const int32_t n = hf->vocab_size();
    if (n > vocab.size())
      throw TokenizerError(std::string(kHfJsonKey) + " has " + std::to_string(n) + " tokens, tokenizer.ggml.tokens " +
                           std::to_string(vocab.size()));
    for (int32_t id = 0; id < n; ++id) {
      const std::optional<std::string_view> t = hf->token(id);
      if (t && *t != vocab.texts[static_cast<std::size_t>(id)])
        throw TokenizerError(std::string(kHfJsonKey) + ": token " + std::to_string(id) + " is '" + std::string(*t) +
                             "' but tokenizer.ggml.tokens has '" + std::string(vocab.texts[static_cast<std::size_t>(id)]) + "'");
    }
  }
  auto impl = std::make_shared<Impl>(std::move(vocab), std::move(hf));
  if (!impl->hf && impl->vocab.kind == TokenizerKind::BytePairEncoding) impl->bpe.emplace(file, impl->vocab);
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  if (impl_->hf) {
    std::vector<int32_t> out;
    impl_->hf->encode(text, add_special, parse_special, out);
    return out;
  }
  const detail::Vocabulary& v = impl_->vocab;
  const std::vector<detail::Fragment> fragments = impl_->specials.split(v, text, parse_special);
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);

  const bool add_bos = add_special && v.add_bos;
  const bool add_end = add_special && (v.kind == TokenizerKind::WordPiece ? v.add_sep : v.add_eos);
  if (add_bos) out.push_back(v.ids.bos);

  // The dummy prefix goes before every text run that starts the text or follows a
  // special token (or, with the prefix at the start only, before the text's first run).
  bool after_special = true;
  bool strip_left = false;  // the previous special token swallows the whitespace after it
  std::string scratch;
  for (const detail::Fragment& f : fragments) {
    if (f.token != kNoToken) {
      out.push_back(f.token);
      after_special = true;
      strip_left = v.strips_right(f.token);
      continue;
    }
    std::string_view run = text.substr(f.begin, f.end - f.begin);
    if (strip_left) {
      while (!run.empty() && is_ascii_space(run.front())) run.remove_prefix(1);
      strip_left = false;
      if (run.empty()) continue;
    }
    switch (v.kind) {
      case TokenizerKind::SentencePiece: {
        const bool at_start = f.begin == 0;
        const bool prefix = v.space_prefix_at_start_only ? at_start && !run.starts_with(' ') &&
                                                               !run.starts_with(kSpaceMark)
                                                         : after_special;
        escape_spaces(run, v.add_space_prefix && prefix, scratch);
        detail::encode_sentencepiece(v, scratch, out);
        break;
      }
      case TokenizerKind::BytePairEncoding:
        impl_->bpe->encode(v, run, out);
        break;
      case TokenizerKind::WordPiece:
        detail::encode_wordpiece(v, run, out);
        break;
      case TokenizerKind::Unigram:
      case TokenizerKind::WordLevel:
        throw TokenizerError("the " + v.model_name + " model needs tokenizer.huggingface.json");
    }
    after_special = false;
  }

  if (add_end) out.push_back(v.kind == TokenizerKind::WordPiece ? v.ids.sep : v.ids.eos);
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  const detail::Vocabulary& v = impl_->vocab;
  if (!v.contains(id)) {
    throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary of " +
                            std::to_string(v.size()) + " tokens");
  }
  const TokenType type = v.type(id);
  if (!render_special && (type == TokenType::Control || type == TokenType::Unknown)) return {};
  return std::string(impl_->pieces[static_cast<std::size_t>(id)]);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, const DecodeOptions& options) const {
  if (impl_->hf) {
    for (int32_t id : ids) {
      if (!impl_->vocab.contains(id)) {
        throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary of " +
                                std::to_string(impl_->vocab.size()) + " tokens");
      }
    }
    // Padding ids past the pipeline's own tokens have no text.
    std::vector<int32_t> known;
    known.reserve(ids.size());
    for (int32_t id : ids) {
      if (impl_->hf->token(id)) known.push_back(id);
    }
    return impl_->hf->decode(known, !options.render_special, {.continuation = !options.strip_space_prefix});
  }
  std::string out;
  bool after_special = true;
  for (int32_t id : ids) detail::append_token_text(*this, id, options, after_special, out);
  return out;
}

TokenizerKind Tokenizer::kind() const { return impl_->vocab.kind; }
bool Tokenizer::has_hf_pipeline() const { return impl_->hf != nullptr; }
const std::string& Tokenizer::model_name() const { return impl_->vocab.model_name; }
const std::string& Tokenizer::pre_tokenizer() const { return impl_->vocab.pre_name; }
int32_t Tokenizer::n_vocab() const { return impl_->vocab.size(); }

std::string_view Tokenizer::token_text(int32_t id) const {
  return impl_->vocab.texts.at(static_cast<std::size_t>(id));
}
float Tokenizer::token_score(int32_t id) const {
  return impl_->vocab.scores.at(static_cast<std::size_t>(id));
}
TokenType Tokenizer::token_type(int32_t id) const {
  return impl_->vocab.types.at(static_cast<std::size_t>(id));
}
int32_t Tokenizer::find_token(std::string_view text) const { return impl_->vocab.find(text); }

int32_t Tokenizer::bos_id() const { return impl_->vocab.ids.bos; }
int32_t Tokenizer::eos_id() const { return impl_->vocab.ids.eos; }
int32_t Tokenizer::eot_id() const { return impl_->vocab.ids.eot; }
int32_t Tokenizer::eom_id() const { return impl_->vocab.ids.eom; }
int32_t Tokenizer::unk_id() const { return impl_->vocab.ids.unk; }
int32_t Tokenizer::sep_id() const { return impl_->vocab.ids.sep; }
int32_t Tokenizer::pad_id() const { return impl_->vocab.ids.pad; }
int32_t Tokenizer::cls_id() const { return impl_->vocab.ids.cls; }
int32_t Tokenizer::mask_id() const { return impl_->vocab.ids.mask; }
bool Tokenizer::add_bos() const { return impl_->vocab.add_bos; }
bool Tokenizer::add_eos() const { return impl_->vocab.add_eos; }
bool Tokenizer::add_space_prefix() const { return impl_->vocab.add_space_prefix; }
bool Tokenizer::space_prefix_at_start_only() const { return impl_->vocab.space_prefix_at_start_only; }

bool Tokenizer::is_eog(int32_t id) const {
  const std::vector<int32_t>& eog = impl_->vocab.eog_ids;
  return std::binary_search(eog.begin(), eog.end(), id);
}

bool Tokenizer::is_special(int32_t id) const {
  return impl_->vocab.contains(id) && impl_->vocab.is_special(id);
}

namespace detail {

void append_token_text(const Tokenizer& tokenizer, int32_t id, const DecodeOptions& options,
                       bool& after_special, std::string& out) {
  const std::string piece = tokenizer.token_to_piece(id, options.render_special);
  if (tokenizer.is_special(id)) {
    out += piece;
    // As Hugging Face's decoders strip only the text's first space, text after a shown
    // special token keeps its space.
    after_special = after_special && piece.empty();
    return;
  }
  const bool strip = after_special && options.strip_space_prefix &&
                     tokenizer.add_space_prefix() && !piece.empty() && piece[0] == ' ';
  out.append(piece, strip ? 1 : 0);
  after_special = false;
}

}  // namespace detail

}  // namespace lamina::model

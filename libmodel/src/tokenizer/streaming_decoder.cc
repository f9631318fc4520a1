#include "lamina/model/tokenizer.h"
#include "utf8.h"

namespace lamina::model {

namespace {

// Whether `text` ends inside a UTF-8 sequence that later bytes could still complete,
// or (for decoders that replace broken sequences) on a replacement character.
bool ends_unfinished(std::string_view text) {
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  return text.ends_with(kReplacement) || utf8::complete_prefix(text) < text.size();
}

}  // namespace

StreamingDecoder::StreamingDecoder(Tokenizer tokenizer, DecodeOptions options)
    : tokenizer_(std::move(tokenizer)), options_(options) {}

std::string StreamingDecoder::decode_from(std::size_t begin, std::size_t end) const {
  return tokenizer_.decode(std::span(ids_).subspan(begin, end - begin), options_);
}

void StreamingDecoder::prime(std::span<const int32_t> context) {
  reset();
  ids_.assign(context.begin(), context.end());
  // A few tokens of context are enough to place the next token's text.
  constexpr std::size_t kContext = 4;
  prefix_ = ids_.size() > kContext ? ids_.size() - kContext : 0;
  read_ = ids_.size();
  prefix_text_ = decode_from(prefix_, read_);
}

std::string StreamingDecoder::push(int32_t id) {
  ids_.push_back(id);
  const std::string text = decode_from(prefix_, ids_.size());
  // A character is at most 4 bytes, so a few held tokens always complete one; past that
  // the text goes out as it is (a stream of real U+FFFD characters must not grow the
  // window without end).
  constexpr std::size_t kMaxHeld = 8;
  const bool may_wait = ids_.size() - read_ < kMaxHeld;
  if (text.size() <= prefix_text_.size() || !text.starts_with(prefix_text_) || (may_wait && ends_unfinished(text)))
    return {};
  std::string out = text.substr(prefix_text_.size());
  // The next window starts at the tokens just returned, so their text anchors the next.
  prefix_ = read_;
  read_ = ids_.size();
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_));
  read_ -= prefix_;
  prefix_ = 0;
  prefix_text_ = decode_from(prefix_, read_);
  return out;
}

std::string StreamingDecoder::finish() {
  const std::string text = decode_from(prefix_, ids_.size());
  std::string out = text.starts_with(prefix_text_) ? text.substr(prefix_text_.size()) : std::string();
  reset();
  return out;
}

void StreamingDecoder::reset() {
  ids_.clear();
  prefix_ = read_ = 0;
  prefix_text_.clear();
}

}  // namespace lamina::model

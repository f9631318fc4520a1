#include "lamina/model/tokenizer.h"
#include "tokenizer/decoding.h"
#include "tokenizer/unicode.h"

namespace lamina::model {

namespace {

// Length of the prefix of `bytes` that does not end inside a UTF-8 sequence that later
// bytes could still complete.
std::size_t complete_prefix_length(std::string_view bytes) {
  const std::size_t n = bytes.size();
  // A sequence is at most 4 bytes: look back for its lead byte among the last 3.
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<unsigned char>(bytes[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking
    if (b < 0xC0 || b >= 0xF8) return n;  // ASCII, or a byte that never starts a sequence
    return detail::utf8_length_from_lead(b) > back ? n - back : n;
  }
  return n;
}

}  // namespace

StreamingDecoder::StreamingDecoder(Tokenizer tokenizer, DecodeOptions options)
    : tokenizer_(std::move(tokenizer)), options_(options) {}

std::string StreamingDecoder::push(int32_t id) {
  detail::append_token_text(tokenizer_, id, options_, at_fragment_start_, pending_);
  const std::size_t ready = complete_prefix_length(pending_);
  std::string out = pending_.substr(0, ready);
  pending_.erase(0, ready);
  return out;
}

std::string StreamingDecoder::finish() {
  std::string out = std::move(pending_);
  reset();
  return out;
}

void StreamingDecoder::reset() {
  pending_.clear();
  at_fragment_start_ = true;
}

}  // namespace lamina::model

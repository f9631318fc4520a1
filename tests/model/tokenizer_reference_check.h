// Shared by the tests that hold lamina's tokenizer against Hugging Face's: one string's
// ids (with and without special tokens) and the three decodes of them.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lamina/model/tokenizer.h"

namespace lamina::model::reference_check {

struct Expected {
  std::string text;
  std::vector<int32_t> ids_with_special;
  std::vector<int32_t> ids_no_special;
  std::string decode_keep_special;  // decode(ids_with_special), special tokens shown
  std::string decode_skip_special;  // decode(ids_with_special, skip_special_tokens)
  std::string decode_no_special;    // decode(ids_no_special)
};

// Which of the five agree (a decode counts only when streaming it token by token
// gives the same text too).
struct Outcome {
  bool encode_with = false, encode_without = false, decode_keep = false, decode_skip = false, decode_plain = false;
  bool all() const { return encode_with && encode_without && decode_keep && decode_skip && decode_plain; }
};

inline std::string stream_decode(const Tokenizer& tok, const std::vector<int32_t>& ids, const DecodeOptions& options) {
  StreamingDecoder decoder(tok, options);
  std::string text;
  for (int32_t id : ids) text += decoder.push(id);
  return text + decoder.finish();
}

inline std::string show(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(ids[i]);
  }
  return s + "]";
}

// Checks every field, reporting each mismatch as a test failure labelled `label`.
inline Outcome check(const Tokenizer& tok, const Expected& e, const std::string& label) {
  Outcome o;
  const auto with_special = tok.encode(e.text, /*add_special=*/true, /*parse_special=*/true);
  const auto no_special = tok.encode(e.text, /*add_special=*/false, /*parse_special=*/true);
  o.encode_with = with_special == e.ids_with_special;
  o.encode_without = no_special == e.ids_no_special;
  EXPECT_TRUE(o.encode_with) << label << ": ids with special tokens\ngot  " << show(with_special) << "\nwant "
                             << show(e.ids_with_special);
  EXPECT_TRUE(o.encode_without) << label << ": ids without special tokens\ngot  " << show(no_special) << "\nwant "
                                << show(e.ids_no_special);
  const std::string keep = tok.decode(e.ids_with_special, {.render_special = true});
  const std::string skip = tok.decode(e.ids_with_special, {.render_special = false});
  const std::string plain = tok.decode(e.ids_no_special, {.render_special = true});
  const std::string streamed_keep = stream_decode(tok, e.ids_with_special, {.render_special = true});
  const std::string streamed_skip = stream_decode(tok, e.ids_with_special, {.render_special = false});
  EXPECT_EQ(streamed_keep, keep) << label << ": streamed decode keeping special tokens";
  EXPECT_EQ(streamed_skip, skip) << label << ": streamed decode skipping special tokens";
  o.decode_keep = keep == e.decode_keep_special && streamed_keep == keep;
  o.decode_skip = skip == e.decode_skip_special && streamed_skip == skip;
  o.decode_plain = plain == e.decode_no_special;
  EXPECT_TRUE(o.decode_keep) << label << ": decode keeping special tokens\ngot  '" << keep << "'\nwant '"
                             << e.decode_keep_special << "'";
  EXPECT_TRUE(o.decode_skip) << label << ": decode skipping special tokens\ngot  '" << skip << "'\nwant '"
                             << e.decode_skip_special << "'";
  EXPECT_TRUE(o.decode_plain) << label << ": decode without special tokens\ngot  '" << plain << "'\nwant '"
                              << e.decode_no_special << "'";
  return o;
}

}  // namespace lamina::model::reference_check

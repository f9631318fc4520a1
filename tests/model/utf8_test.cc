// libmodel's one UTF-8 coder against the Unicode standard's table of
// well-formed byte sequences (Table 3-7), exhaustively up to three bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "utf8.h"

namespace lamina::model::utf8 {
namespace {

struct Range {
  unsigned char lo, hi;
};

// The length of the well-formed sequence `s` starts with, or 0: Table 3-7,
// row by row, with the first byte choosing the allowed ranges of the rest.
std::size_t reference_length(std::string_view s) {
  auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  auto in = [](unsigned char v, Range r) { return v >= r.lo && v <= r.hi; };
  const Range tail{0x80, 0xBF};
  const unsigned char b0 = b(0);
  if (b0 <= 0x7F) return 1;
  Range second{};
  std::size_t len = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) len = 2, second = tail;
  else if (b0 == 0xE0) len = 3, second = {0xA0, 0xBF};
  else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) len = 3, second = tail;
  else if (b0 == 0xED) len = 3, second = {0x80, 0x9F};
  else if (b0 == 0xF0) len = 4, second = {0x90, 0xBF};
  else if (b0 >= 0xF1 && b0 <= 0xF3) len = 4, second = tail;
  else if (b0 == 0xF4) len = 4, second = {0x80, 0x8F};
  else return 0;
  if (s.size() < len || !in(b(1), second)) return 0;
  for (std::size_t i = 2; i < len; ++i)
    if (!in(b(i), tail)) return 0;
  return len;
}

// The code point by the textbook formula, for a well-formed sequence.
char32_t reference_code_point(std::string_view s, std::size_t len) {
  auto b = [&](std::size_t i) { return static_cast<char32_t>(static_cast<unsigned char>(s[i])); };
  switch (len) {
    case 1: return b(0);
    case 2: return (b(0) - 0xC0) * 64 + (b(1) - 0x80);
    case 3: return (b(0) - 0xE0) * 4096 + (b(1) - 0x80) * 64 + (b(2) - 0x80);
    default: return (b(0) - 0xF0) * 262144 + (b(1) - 0x80) * 4096 + (b(2) - 0x80) * 64 + (b(3) - 0x80);
  }
}

void expect_as_reference(const std::string& s) {
  char32_t cp = 0xABCDEF;
  const std::size_t want = reference_length(s);
  const std::size_t got = decode_at(s, 0, cp, Check::Strict);
  ASSERT_EQ(got, want) << "bytes " << testing::PrintToString(s);
  if (want > 0) {
    ASSERT_EQ(cp, reference_code_point(s, want));
    // Structure accepts everything Strict does, with the same result.
    char32_t loose = 0;
    ASSERT_EQ(decode_at(s, 0, loose, Check::Structure), want);
    ASSERT_EQ(loose, cp);
  }
}

TEST(Utf8, StrictDecodingIsTheStandardsTableUpToThreeBytes) {
  std::string s(3, '\0');
  for (int a = 0; a < 256; ++a) {
    s.resize(1);
    s[0] = static_cast<char>(a);
    expect_as_reference(s);
    s.resize(2);
    for (int b = 0; b < 256; ++b) {
      s.resize(2);
      s[1] = static_cast<char>(b);
      expect_as_reference(s);
      s.resize(3);
      for (int c = 0; c < 256; ++c) {
        s[2] = static_cast<char>(c);
        expect_as_reference(s);
      }
    }
  }
}

TEST(Utf8, StrictDecodingOfFourByteSequences) {
  const unsigned char edges[] = {0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF};
  std::string s(4, '\0');
  for (int a = 0xF0; a < 256; ++a)
    for (int b = 0; b < 256; ++b)
      for (unsigned char c : edges)
        for (unsigned char d : edges) {
          s = {static_cast<char>(a), static_cast<char>(b), static_cast<char>(c), static_cast<char>(d)};
          expect_as_reference(s);
        }
}

TEST(Utf8, StructureAcceptsOverlongsSurrogatesAndBeyondTheLastCodePoint) {
  char32_t cp = 0;
  EXPECT_EQ(decode_at("\xC0\x80", 0, cp, Check::Structure), 2u);  // overlong NUL
  EXPECT_EQ(cp, 0u);
  EXPECT_EQ(decode_at("\xC0\x80", 0, cp, Check::Strict), 0u);
  EXPECT_EQ(decode_at("\xED\xA0\x80", 0, cp, Check::Structure), 3u);  // U+D800
  EXPECT_EQ(cp, 0xD800u);
  EXPECT_EQ(decode_at("\xF7\xBF\xBF\xBF", 0, cp, Check::Structure), 4u);
  EXPECT_EQ(cp, 0x1FFFFFu);
  // What no reading accepts: stray continuation bytes, F8..FF, cut sequences.
  for (Check check : {Check::Structure, Check::Strict}) {
    EXPECT_EQ(decode_at("\x80", 0, cp, check), 0u);
    EXPECT_EQ(decode_at("\xF8\x88\x80\x80\x80", 0, cp, check), 0u);
    EXPECT_EQ(decode_at("\xE2\x82", 0, cp, check), 0u);
    EXPECT_EQ(decode_at("\xE2\x28\xA1", 0, cp, check), 0u);
  }
}

TEST(Utf8, AppendRoundTripsEveryCodePoint) {
  std::string s;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    s.clear();
    append(s, c);
    char32_t back = 0;
    const bool surrogate = c >= 0xD800 && c <= 0xDFFF;
    ASSERT_EQ(decode_at(s, 0, back, Check::Structure), s.size()) << static_cast<uint32_t>(c);
    ASSERT_EQ(back, c);
    ASSERT_EQ(decode_at(s, 0, back, Check::Strict), surrogate ? 0u : s.size()) << static_cast<uint32_t>(c);
    ASSERT_EQ(s.size(), c < 0x80 ? 1u : c < 0x800 ? 2u : c < 0x10000 ? 3u : 4u);
  }
}

TEST(Utf8, CompletePrefixHoldsBackOnlyWhatMoreBytesCanComplete) {
  EXPECT_EQ(complete_prefix(""), 0u);
  EXPECT_EQ(complete_prefix("abc"), 3u);
  EXPECT_EQ(complete_prefix("a\xE2\x82"), 1u);          // the euro sign, cut
  EXPECT_EQ(complete_prefix("a\xE2\x82\xAC"), 4u);      // and whole
  EXPECT_EQ(complete_prefix("a\xF0\x9F\x98"), 1u);      // an emoji, cut
  EXPECT_EQ(complete_prefix("a\xF0\x9F\x98\x80"), 5u);
  EXPECT_EQ(complete_prefix("a\xC3"), 1u);
  EXPECT_EQ(complete_prefix("a\x80\x80"), 3u);          // stray continuation bytes
  EXPECT_EQ(complete_prefix("a\x80\x80\x80\x80"), 5u);
  EXPECT_EQ(complete_prefix("a\xFF"), 2u);              // starts nothing
}

TEST(Utf8, FirstInvalidNamesTheOffset) {
  EXPECT_EQ(first_invalid(""), std::string_view::npos);
  EXPECT_EQ(first_invalid("h\xC3\xA9llo \xF0\x9F\x98\x80"), std::string_view::npos);
  EXPECT_EQ(first_invalid("ab\xC3"), 2u);
  EXPECT_EQ(first_invalid("abc\xED\xA0\x80"), 3u);  // a surrogate
  EXPECT_EQ(first_invalid("\xC1\xBF"), 0u);          // overlong
}

}  // namespace
}  // namespace lamina::model::utf8

// The grammar engine: GBNF parsing and its errors, JSON-schema compilation
// errors, the byte-level matcher (UTF-8 split across tokens), and the fast
// token mask (trie walk, cached per state) against the slow obvious one on
// random grammars and random states.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "lamina/model/grammar.h"
#include "utf8.h"

namespace lamina::model {
namespace {

std::string gbnf_error(const std::string& text) {
  try {
    Grammar::from_gbnf(text);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

std::string schema_error(const std::string& schema, bool strict = false) {
  try {
    Grammar::from_json_schema(schema, JsonSchemaOptions{strict});
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

// One token per byte value, plus an end token (id 256).
std::shared_ptr<const GrammarVocabulary> byte_vocabulary() {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
  pieces.emplace_back("</s>");
  return GrammarVocabulary::from_pieces(pieces, {256});
}

std::string rule_name(int k) {
  std::string name = "r";
  name += std::to_string(k);
  return name;
}

bool allowed_bit(const std::vector<uint64_t>& bits, int32_t id) { return (bits[id >> 6] >> (id & 63)) & 1u; }

TEST(GrammarTest, GbnfErrorsNameLineAndColumn) {
  const std::pair<const char*, const char*> cases[] = {
      {"root ::= foo\n", "line 1, column 10: rule 'foo' is not defined"},
      {"root ::= \"a\"\nx := \"b\"\n", "line 2, column 3: expected '::='"},
      {"root ::= \"abc\n", "line 1, column 14: unterminated string literal"},
      {"root ::= \"\\q\"", "column 11: unknown escape"},
      {"root ::= root \"a\" | \"b\"", "left-recursive"},
      {"root ::= x? root \"a\" | \"c\"\nx ::= \"b\"", "left-recursive"},
      {"start ::= \"a\"", "no rule 'root'"},
      {"root ::= \"a\"{3,1}", "upper bound is below"},
      {"root ::= [b-a]", "range ends before it starts"},
      {"root ::= ( \"a\"", "expected ')'"},
      {"root ::= \"a\"\nroot ::= \"b\"", "defined twice"},
      {"root ::= x\nx ::= \"a\" x", "matches no text"},
      {"root ::= \"\xff\"", "invalid UTF-8"},
  };
  // Repetitions that unroll past the size bound,
  std::string big = "root ::=";
  for (int i = 0; i < 100; ++i) big += " [a-z]{0,4096}";
  EXPECT_NE(gbnf_error(big).find("the grammar is too large"), std::string::npos);
  // groups nested past the parser's bound, and rules that open one inside
  // the other at their start past the recognizer's.
  EXPECT_NE(gbnf_error("root ::= " + std::string(300, '(') + "\"a\"" + std::string(300, ')')).find("groups nest"),
            std::string::npos);
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 1200; ++i) chain += rule_name(i) + " ::= " + rule_name(i + 1) + " | \"x\"\n";
  chain += "r1200 ::= \"y\"\n";
  EXPECT_NE(gbnf_error(chain).find("more than 1000 deep"), std::string::npos) << gbnf_error(chain).substr(0, 200);
  for (const auto& [text, message] : cases) {
    const std::string error = gbnf_error(text);
    EXPECT_NE(error.find(message), std::string::npos) << text << "\n gave: " << error;
  }
}

TEST(GrammarTest, MatcherFollowsTheGrammar) {
  auto c = std::make_shared<TokenConstraint>(
      Grammar::from_gbnf("# a comment\nroot ::= \"ab\" [0-9]+ (\",\" item){0,2}\nitem ::= [x-z]\n  | \"w\"\n"),
      byte_vocabulary());
  GrammarMatcher m(c);
  EXPECT_FALSE(m.accept('b'));
  EXPECT_TRUE(m.accept_bytes("ab"));
  EXPECT_FALSE(m.can_end());
  const auto bits = m.allowed();
  for (int b = 0; b < 257; ++b) EXPECT_EQ(allowed_bit(bits, b), b >= '0' && b <= '9') << b;
  EXPECT_TRUE(m.accept_bytes("12,x,w"));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.must_end());
  EXPECT_TRUE(m.accept(256));
  EXPECT_FALSE(m.accept(','));
}

TEST(GrammarTest, Utf8CharactersSplitAcrossTokens) {
  auto c = std::make_shared<TokenConstraint>(Grammar::from_gbnf("root ::= \"é\" [α-ω] [^a]"), byte_vocabulary());
  GrammarMatcher m(c);
  EXPECT_TRUE(m.accept(0xC3));
  EXPECT_FALSE(m.accept(0xAA));  // é is C3 A9
  EXPECT_TRUE(m.accept(0xA9));
  EXPECT_TRUE(m.accept_bytes("\xCE"));  // α..ο start CE, π..ω start CF
  EXPECT_FALSE(m.accept(0xB0));         // CE B0 is ΰ, before α (CE B1)
  EXPECT_TRUE(m.accept(0xB1));
  // [^a]: any character but 'a', only as valid UTF-8 (no surrogates, no stray bytes).
  const auto bits = m.allowed();
  for (int b = 0; b < 256; ++b) {
    const bool lead = (b < 0x80 && b != 'a') || (b >= 0xC2 && b <= 0xF4);
    EXPECT_EQ(allowed_bit(bits, b), lead) << b;
  }
  EXPECT_TRUE(m.accept(0xED));  // ED A0..BF would be a surrogate
  const auto after = m.allowed();
  for (int b = 0x80; b < 0xC0; ++b) EXPECT_EQ(allowed_bit(after, b), b < 0xA0) << b;
}

TEST(GrammarTest, RandomWalksOverNegatedClassesStayValidUtf8) {
  auto c = std::make_shared<TokenConstraint>(Grammar::from_gbnf("root ::= [^a-c\\u00e9]{1,6}"), byte_vocabulary());
  std::mt19937 rng(7);
  for (int walk = 0; walk < 200; ++walk) {
    GrammarMatcher m(c);
    std::string text;
    for (;;) {
      const auto bits = m.allowed();
      std::vector<int32_t> ids;
      for (int32_t id = 0; id < 257; ++id)
        if (allowed_bit(bits, id)) ids.push_back(id);
      ASSERT_FALSE(ids.empty());
      const int32_t id = ids[rng() % ids.size()];
      ASSERT_TRUE(m.accept(id));
      if (id == 256) break;
      text += static_cast<char>(id);
    }
    std::size_t chars = 0;
    for (std::size_t pos = 0; pos < text.size(); ++chars) {
      char32_t cp = 0;
      const std::size_t n = utf8::decode_at(text, pos, cp, utf8::Check::Strict);
      ASSERT_NE(n, 0u) << "invalid UTF-8 at byte " << pos;
      EXPECT_TRUE(cp != 'a' && cp != 'b' && cp != 'c' && cp != 0xE9);
      pos += n;
    }
    EXPECT_GE(chars, 1u);
    EXPECT_LE(chars, 6u);
  }
}

// A random grammar over a small alphabet; some come out left-recursive or
// empty and are refused, the rest are used.
std::string random_gbnf(std::mt19937& rng) {
  const char* atoms[] = {"\"a\"", "\"b\"", "\"ab\"", "\"é\"", "[a-c]", "[^a]", "\"\"", "."};
  std::string out;
  const int n_rules = 1 + static_cast<int>(rng() % 4);
  for (int r = 0; r < n_rules; ++r) {
    out += r == 0 ? std::string("root") : rule_name(r);
    out += " ::= ";
    const int n_alts = 1 + static_cast<int>(rng() % 3);
    for (int a = 0; a < n_alts; ++a) {
      if (a) out += " | ";
      const int n_items = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < n_items; ++i) {
        if (rng() % 4 == 0 && r + 1 < n_rules)
          out += rule_name(r + 1 + static_cast<int>(rng() % static_cast<unsigned>(n_rules - r - 1)));
        else if (rng() % 5 == 0)
          out.append("(").append(atoms[rng() % 8]).append(" | ").append(atoms[rng() % 8]).append(")");
        else
          out += atoms[rng() % 8];
        const char* ops[] = {"", "", "", "*", "+", "?", "{2}", "{1,3}", "{0,}"};
        out += std::string(ops[rng() % 9]) + " ";
      }
    }
    out += "\n";
  }
  return out;
}

std::shared_ptr<const GrammarVocabulary> random_vocabulary(std::mt19937& rng) {
  const std::string alphabet[] = {"a", "b", "c", "\xC3", "\xA9", "\xC3\xA9", "x", "\n"};
  std::vector<std::string> pieces;
  for (int i = 0; i < 300; ++i) {
    std::string p;
    const int len = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < len; ++k) p += alphabet[rng() % 8];
    pieces.push_back(p);
  }
  pieces.push_back("<eos>");
  return GrammarVocabulary::from_pieces(pieces, {300});
}

TEST(GrammarTest, FastMaskEqualsReferenceOnRandomGrammars) {
  std::mt19937 rng(1234);
  int used = 0;
  for (int g = 0; g < 300; ++g) {
    const std::string text = random_gbnf(rng);
    std::shared_ptr<const Grammar> grammar;
    try {
      grammar = Grammar::from_gbnf(text);
    } catch (const GrammarError&) {
      continue;
    }
    ++used;
    auto c = std::make_shared<TokenConstraint>(grammar, random_vocabulary(rng));
    for (int walk = 0; walk < 3; ++walk) {
      GrammarMatcher m(c);
      for (int step = 0; step < 12; ++step) {
        const auto fast = m.allowed();
        ASSERT_EQ(fast, m.allowed_reference()) << text << "step " << step;
        std::vector<int32_t> ids;
        for (int32_t id = 0; id < 301; ++id)
          if (allowed_bit(fast, id)) ids.push_back(id);
        if (ids.empty() || (ids.size() == 1 && ids[0] == 300)) break;
        int32_t id = ids[rng() % ids.size()];
        if (id == 300) id = ids[0];
        ASSERT_TRUE(m.accept(id));
      }
    }
  }
  EXPECT_GE(used, 100);
}

TEST(GrammarTest, TextNestingIsBounded) {
  auto c = std::make_shared<TokenConstraint>(Grammar::from_gbnf("root ::= \"(\" root? \")\""), byte_vocabulary());
  GrammarMatcher m(c);
  bool refused = false;
  try {
    for (int i = 0; i < 5000 && m.accept('('); ++i) {
    }
  } catch (const GrammarError& e) {
    refused = std::string(e.what()).find("nests more than 2048") != std::string::npos;
  }
  EXPECT_TRUE(refused);
}

TEST(GrammarTest, JsonSchemaErrorsAreClear) {
  EXPECT_NE(schema_error(R"({"type":"array","minItems":3,"maxItems":1})").find("at #: maxItems is below minItems"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"type":"object","properties":{"a":{"type":"string","minLength":5,"maxLength":2}}})")
                .find("at #/properties/a: maxLength is below minLength"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"type":"string","contentEncoding":"base64"})").find("'contentEncoding' is not supported"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"type":"object","properties":{"a":false},"required":["a"]})").find("accepts no value"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"$ref":"#/$defs/missing"})").find("names nothing"), std::string::npos);
  EXPECT_NE(schema_error(R"({"$ref":"http://example.com/s.json"})").find("only references inside"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type":"string","format":"hostname"})").find("format \"hostname\" is not supported"),
            std::string::npos);
  EXPECT_NE(schema_error(R"({"type":"integer","minimum":5,"maximum":1})").find("no integer"), std::string::npos);
  EXPECT_NE(schema_error(R"({"enum":[]})").find("non-empty"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type":"object","required":["x"]})").find("'x' is not in properties"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type":"string","pattern":"(?=a)b"})").find("lookaround"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type":"object","properties":{"a":{}}})", true).find("strict mode needs"),
            std::string::npos);
  EXPECT_NE(schema_error("{\"type\":").find("not valid JSON"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type":"widget"})").find("unknown type 'widget'"), std::string::npos);
  // A recursive schema with no way out matches nothing.
  EXPECT_NE(schema_error(R"({"$ref":"#/$defs/n","$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}},"required":["next"],"additionalProperties":false}}})")
                .find("matches no text"),
            std::string::npos);
}

TEST(GrammarTest, JsonSchemaGrammarAcceptsAndRefuses) {
  auto accepts = [](const std::string& schema, const std::string& text) {
    auto c = std::make_shared<TokenConstraint>(Grammar::from_json_schema(schema), byte_vocabulary());
    GrammarMatcher m(c);
    return m.accept_bytes(text) && m.can_end();
  };
  const std::string person =
      R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0},
          "email":{"type":"string","format":"email"}},"required":["name"]})";
  EXPECT_TRUE(accepts(person, R"({"name": "Ann", "age": 31})"));
  EXPECT_TRUE(accepts(person, R"({"name":"A\"b","email":"a.b@example.org"})"));
  EXPECT_FALSE(accepts(person, R"({"age": 31})"));
  EXPECT_FALSE(accepts(person, R"({"name": "Ann", "age": -1})"));
  EXPECT_FALSE(accepts(person, R"({"name": "Ann", "extra": 1})"));
  const std::string tree =
      R"({"$defs":{"node":{"type":"object","properties":{"v":{"enum":["x",2,null]},"kids":{"type":"array",
          "items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["v"]}},"$ref":"#/$defs/node"})";
  EXPECT_TRUE(accepts(tree, R"({"v":"x","kids":[{"v":2},{"v":null,"kids":[]}]})"));
  EXPECT_FALSE(accepts(tree, R"({"v":"x","kids":[{"v":2},{"v":2},{"v":2}]})"));
  EXPECT_TRUE(accepts(R"({"type":"string","pattern":"^[A-Z]{2}-\\d{3}$"})", R"("AB-123")"));
  EXPECT_FALSE(accepts(R"({"type":"string","pattern":"^[A-Z]{2}-\\d{3}$"})", R"("AB-12")"));
  EXPECT_TRUE(accepts(R"({"type":"string","format":"date-time"})", R"("2026-11-27T08:30:00Z")"));
  EXPECT_FALSE(accepts(R"({"type":"string","format":"date"})", R"("2026-13-01")"));
  EXPECT_TRUE(accepts(R"({"anyOf":[{"type":"null"},{"type":"array","items":{"type":"boolean"},"minItems":1}]})",
                      "[true,false]"));
  EXPECT_FALSE(accepts(R"({"anyOf":[{"type":"null"},{"type":"array","items":{"type":"boolean"},"minItems":1}]})",
                       "[]"));
}

}  // namespace
}  // namespace lamina::model

// Chat template errors: syntax errors name the line and column, rendering
// errors name the expression that failed, raise_exception() passes its
// message through, and hostile templates end in an error instead of
// exhausting the stack, memory or time.
#include <gtest/gtest.h>

#include <string>

#include "lamina/model/chat_template.h"

namespace lamina::model {
namespace {

using Kind = ChatTemplateError::Kind;

ChatTemplateInputs inputs() {
  ChatTemplateInputs in;
  in.messages = {{"system", "Be brief."}, {"user", "Hi there"}};
  return in;
}

// The error that parsing and rendering `source` ends in.
ChatTemplateError error_of(const std::string& source) {
  try {
    ChatTemplate(source).render(inputs());
  } catch (const ChatTemplateError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for: " << source.substr(0, 200);
  return ChatTemplateError(Kind::Render, "");
}

std::string repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

struct ErrorCase {
  const char* source;
  Kind kind;
  const char* message;
};

const ErrorCase kErrorCases[] = {
    // Syntax errors, at the token where parsing failed.
    {"{% if true %}x", Kind::Syntax,
     "chat template 1:15: unexpected end of template, expected 'elif' or 'else' or 'endif'"},
    {"Hello\n{{ 1 + }}", Kind::Syntax, "chat template 2:8: expected an expression, got end of print statement '}}'"},
    {"a\n\n  {% for x in %}", Kind::Syntax,
     "chat template 3:15: expected an expression, got end of statement block '%}'"},
    {"{% endfor %}", Kind::Syntax, "chat template 1:4: unexpected 'endfor'"},
    {"{% for x in y %}\n{% endif %}{% endfor %}", Kind::Syntax, "chat template 2:4: unexpected 'endif'"},
    {"{% if x %}{% break %}{% endif %}", Kind::Syntax, "chat template 1:14: 'break' outside a loop"},
    {"{{ 'abc }}", Kind::Syntax, "chat template 1:4: the string literal is not closed"},
    {"text {{ x", Kind::Syntax, "chat template 1:6: the tag is not closed with '}}'"},
    {"{# never closed", Kind::Syntax, "chat template 1:1: the comment is not closed with '#}'"},
    {"{{ ) }}", Kind::Syntax, "chat template 1:4: unexpected ')'"},
    {"{{ a b }}", Kind::Syntax, "chat template 1:6: expected end of print statement '}}', got 'b'"},
    {"{% include 'other.jinja' %}", Kind::Syntax,
     "chat template 1:4: the 'include' tag is not supported in chat templates"},
    {"{% frobnicate %}", Kind::Syntax, "chat template 1:4: unknown tag 'frobnicate'"},
    {"{% macro m(a=1, b) %}{% endmacro %}", Kind::Syntax,
     "chat template 1:18: a parameter without a default follows one with a default"},
    {"{{ '\xc3\xa9' ~ }}", Kind::Syntax, "chat template 1:10: expected an expression, got end of print statement '}}'"},
    {"{{ 99999999999999999999 }}", Kind::Syntax,
     "chat template 1:4: integer literal out of range: 99999999999999999999"},
    // Rendering errors, at the expression that failed.
    {"line\n{{ messages[0].role.x.y }}", Kind::Render, "chat template 2:22: 'str object' has no attribute 'x'"},
    {"{{ nothing.attr }}", Kind::Render, "chat template 1:11: 'nothing' is undefined"},
    {"{{ 'a' + 1 }}", Kind::Render, "chat template 1:8: unsupported operand type(s) for +: 'str' and 'int'"},
    {"{{ 1 < 'a' }}", Kind::Render, "chat template 1:4: '<' not supported between instances of 'int' and 'str'"},
    {"{{ [1].append(2) }}", Kind::Render,
     "chat template 1:14: access to attribute 'append' of 'list' object is unsafe."},
    {"{{ 1 // 0 }}", Kind::Render, "chat template 1:6: integer division or modulo by zero"},
    {"{% for a, b in [1] %}{% endfor %}", Kind::Render, "chat template 1:1: cannot unpack non-iterable int object"},
    {"{% set x = 1 %}{% set x.y = 2 %}", Kind::Render,
     "chat template 1:16: cannot assign attribute on non-namespace object"},
    {"{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", Kind::Render,
     "chat template 1:35: macro 'm' takes not more than 1 argument(s)"},
    {"{{ x | nofilter }}", Kind::Unsupported, "chat template 1:8: no filter named 'nofilter'"},
    {"{{ 1 is nottest }}", Kind::Unsupported, "chat template 1:6: no test named 'nottest'"},
    {"{{ 2 ** 64 }}", Kind::Unsupported,
     "chat template 1:6: integer overflow (Python integers are unbounded; this renderer uses 64 bits)"},
    {"{{ '%s' % 1 }}", Kind::Unsupported, "chat template 1:9: printf-style string formatting with % is not supported"},
};

TEST(ChatTemplateErrors, NameTheirPlace) {
  for (const ErrorCase& c : kErrorCases) {
    const ChatTemplateError e = error_of(c.source);
    EXPECT_EQ(e.kind(), c.kind) << c.source;
    EXPECT_STREQ(e.what(), c.message) << c.source;
  }
}

TEST(ChatTemplateErrors, RaiseExceptionPassesItsMessage) {
  const ChatTemplateError e = error_of(
      "{% for m in messages %}{% if m.role == 'system' %}"
      "{{ raise_exception('Bad role: ' ~ m.role) }}{% endif %}{% endfor %}");
  EXPECT_EQ(e.kind(), Kind::Raised);
  EXPECT_STREQ(e.what(), "Bad role: system");
}

TEST(ChatTemplateErrors, RaiseExceptionInsideAMacro) {
  const ChatTemplateError e =
      error_of("{% macro fail() %}{{ raise_exception('from a macro') }}{% endmacro %}{{ fail() }}");
  EXPECT_EQ(e.kind(), Kind::Raised);
  EXPECT_STREQ(e.what(), "from a macro");
}

// Hostile templates: each must end quickly with an error.

TEST(ChatTemplateLimits, DeepNestingIsASyntaxError) {
  const std::string deep_parens = "{{ " + repeat("(", 20000) + "1" + repeat(")", 20000) + " }}";
  const std::string deep_blocks = repeat("{% if true %}", 20000);
  const std::string long_chain = "{{ 1" + repeat(" + 1", 50000) + " }}";
  const std::string many_nots = "{{ " + repeat("not ", 50000) + "1 }}";
  const std::string many_minus = "{{ " + repeat("-", 50000) + "1 }}";
  const std::string deep_lists = "{{ " + repeat("[", 50000) + repeat("]", 50000) + " }}";
  const std::string long_attributes = "{{ x" + repeat(".a", 50000) + " }}";
  for (const std::string* s :
       {&deep_parens, &deep_blocks, &long_chain, &many_nots, &many_minus, &deep_lists, &long_attributes}) {
    const ChatTemplateError e = error_of(*s);
    EXPECT_EQ(e.kind(), Kind::Syntax);
    EXPECT_NE(std::string(e.what()).find("nests deeper than"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplateLimits, RunawayRendersAreStopped) {
  const struct {
    const char* source;
    const char* message_part;
  } cases[] = {
      {"{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "nests or recurses deeper than"},
      {"{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}", "too much work"},
      {"{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "rendered text is longer than 32 MiB"},
      {"{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
       "string longer than 32 MiB"},
      {"{% set ns = namespace(s='') %}{% for i in range(1000000) %}{% set ns.s = ns.s ~ 'xxxxxxxxxx' %}{% endfor %}",
       "too much work"},
      {"{% set ns = namespace(l=[]) %}{% for i in range(1000000) %}{% set ns.l = ns.l + [i] %}{% endfor %}",
       "too much work"},
      {"{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}{% endfor %}",
       "nest deeper than 128 levels"},
      {"{{ range(1000000000000)|length }}", "range() of more than"},
      {"{{ 'x' * 1000000000000 }}", "string longer than 32 MiB"},
      {"{{ [1, 2] * 1000000000000 }}", "list longer than"},
  };
  for (const auto& c : cases) {
    const ChatTemplateError e = error_of(c.source);
    EXPECT_EQ(e.kind(), Kind::Render) << c.source;
    EXPECT_NE(std::string(e.what()).find(c.message_part), std::string::npos) << c.source << "\n" << e.what();
  }
}

}  // namespace
}  // namespace lamina::model

// The Jinja language as chat templates use it: whitespace control, loops,
// scoping, macros, filters, tests, methods and operators. Each expected string
// is what jinja2 3.1 renders for the template when it is set up as
// transformers sets it up (trim_blocks, lstrip_blocks, loop controls), with
// the messages, special tokens and flags of `standard_inputs()`.
#include <gtest/gtest.h>

#include <string>

#include "lamina/model/chat_template.h"

namespace lamina::model {
namespace {

ChatTemplateInputs standard_inputs() {
  ChatTemplateInputs in;
  in.messages = {{"system", "Be brief."}, {"user", "Hi there"}};
  in.add_generation_prompt = true;
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  return in;
}

struct FeatureCase {
  const char* name;
  const char* source;
  const char* expected;
};

const FeatureCase kFeatureCases[] = {
    {"LstripAndTrimBlocks", "  {% if true %}\n  x\n  {% endif %}\n  y  {# c #}\nz\n", "  x\n  y  z"},
    {"PlusDisablesStripping", "a  {%+ if true %}b{% endif +%}\nc", "a  b\nc"},
    {"MinusStripsAllWhitespace", "a \n {%- if true -%} \n b \n {%- endif -%}\n c", "abc"},
    {"VariablesKeepNewlines", "{{ 'x' }}\n{{ 'y' }}\n", "x\ny"},
    {"VariableMinusStrips", "{{- ' a ' -}}  \n  {{ 'b' }}", " a b"},
    {"CommentsStripLikeBlocks", "{# comment #}\nline\n  {#- strip -#}  \nend", "lineend"},
    {"RawBlock", "{% raw %}{{ not parsed }}{% endraw %}", "{{ not parsed }}"},
    {"NewlinesNormalized", "line1\r\nline2\r{% if true %}\r\nx{% endif %}\n\n", "line1\nline2\nx"},
    {"IndentedLoop", "{% for m in messages %}\n  - {{ m.role }}\n{% endfor %}\n", "  - system\n  - user\n"},
    {"LoopVariables",
     "{% for m in messages %}{{ loop.index0 }}/{{ loop.index }}/{{ loop.length }}/{{ loop.first }}/{{ loop.las"
     "t }}/{{ loop.revindex }}/{{ loop.revindex0 }};{% endfor %}",
     "0/1/2/True/False/2/1;1/2/2/False/True/1/0;"},
    {"LoopFilterAndElse",
     "{% for x in [1,2,3,4,5] if x is odd %}{{ x }}{{ ',' if not loop.last }}{% else %}none{% endfor %}", "1,3,5"},
    {"LoopElseWhenEmpty", "{% for x in [] %}x{% else %}empty{% endfor %}", "empty"},
    {"LoopOverDicts",
     "{% for k, v in {'a': 1, 'b': 2}|items %}{{ k }}={{ v }} {% endfor %}{% for k in {'z': 0, 'y': 1} %}{{ k "
     "}}{% endfor %}{% for k, v in {'q': 3}.items() %}{{ k }}{{ v }}{% endfor %}",
     "a=1 b=2 zyq3"},
    {"BreakAndContinue",
     "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ "
     "x }}{% endfor %}",
     "0134"},
    {"SetInsideLoopIsLocal",
     "{% set x = 'outer' %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }} {% endfor %}{{ x }}",
     "outer1 outer2 outer"},
    {"LoopElseAfterBreakOrContinue",
     "{% for m in [1,2] %}{% if m == 1 %}{% break %}{% endif %}{% else %}E{% endfor %}|{% for m in [1,2] %}{% "
     "if m == 2 %}{% break %}{% endif %}{% else %}E{% endfor %}|{% for m in [1] %}{% continue %}{% else %}E{% "
     "endfor %}|{% for m in [1,2] %}{% for k in [] %}{% else %}{% break %}{% endfor %}{{ m }}{% endfor %}",
     "E||E|"},
    {"UnpackDictsAndStrings",
     "{% for k, v in messages %}{{ k }}/{{ v }} {% endfor %}{% set a, b = 'xy' %}{{ b }}{{ a }}",
     "role/content role/content yx"},
    {"FilteredLoopSeesTuples", "{% for i, j in [[1, 2], [3, 4]] if i %}{{ loop.previtem }}{% endfor %}", "(1, 2)"},
    {"OuterValueUntilAssigned",
     "{% set a = 5 %}{% for x in [1] %}{{ a }}{% set a = 1 %}{{ a }}{% endfor %}{{ a }}{% macro g() %}{{ late "
     "}}{% endmacro %}{% set late = 3 %}{{ g() }}",
     "5153"},
    {"SetInsideIfIsNotLocal", "{% if true %}{% set y = 5 %}{% endif %}{{ y }}", "5"},
    {"PrevNextCycle",
     "{% for i in [1,2,3] %}{{ loop.previtem }}|{{ loop.nextitem }}|{{ loop.cycle('a','b') }} {% endfor %}",
     "|2|a 1|3|b 2||a "},
    {"NestedLoopsShadowLoop",
     "{% for a in [1,2] %}{% for b in 'xy' %}{{ loop.index }}{{ b }}{% endfor %}{{ loop.index }} {% endfor %}",
     "1x2y1 1x2y2 "},
    {"Namespace",
     "{% set ns = namespace(found=false, n=0) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.foun"
     "d = true %}{% endif %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.found }} {{ ns.n }}",
     "True 2"},
    {"TupleAssignment", "{% set a, b = 1, 'two' %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}", "1two(1, 2)"},
    {"BlockSet", "{% set block %}  inner {{ 1 + 1 }} {% endset %}[{{ block }}][{{ block|trim }}]",
     "[  inner 2 ][inner 2]"},
    {"BlockSetWithFilter", "{% set x | upper %}shout{% endset %}{{ x }}", "SHOUT"},
    {"IfElifElse",
     "{% for n in [0, 1, 2, 3] %}{% if n == 0 %}zero{% elif n == 1 %}one{% elif n is even %}even{% else %}othe"
     "r{% endif %} {% endfor %}",
     "zero one even other "},
    {"ConditionalAndBooleanOperators",
     "{{ 'yes' if messages else 'no' }}|{{ 'a' if false }}|{{ none or 'fallback' }}|{{ 0 and 'x' }}|{{ 1 and '"
     "x' }}|{{ not 1 == 2 }}",
     "yes||fallback|0|x|True"},
    {"MacroWithDefaults",
     "{% macro tag(name, close=false) %}<{{ '/' if close }}{{ name }}>{% endmacro %}{{ tag('b') }}x{{ tag('b',"
     " close=true) }}{{ tag(name='i') }}",
     "<b>x</b><i>"},
    {"RecursiveMacro",
     "{% macro count(n) %}{{ n }}{% if n > 0 %}{{ count(n - 1) }}{% endif %}{% endmacro %}{{ count(3) }}", "3210"},
    {"MacroSeesTopLevel",
     "{% set greeting = 'hi' %}{% macro say(who) %}{{ greeting }} {{ who }}{% endmacro %}{{ say('bob') }}", "hi bob"},
    {"MacroInLoopSeesLoopVariable",
     "{% for a in [1, 2] %}{% macro show() %}<{{ a }}>{% endmacro %}{{ show() }}{% endfor %}", "<1><2>"},
    {"MacroMissingParameterIsUndefined", "{% macro m(a, b) %}[{{ a }}|{{ b }}]{% endmacro %}{{ m(1) }}", "[1|]"},
    {"StringFilters",
     "{{ '  pad  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'Hello'|upper }}|{{ 'Hello'|lower }}|{{ 'hello wORLD-fo"
     "o (bar'|title }}|{{ 'hELLO'|capitalize }}",
     "pad|hi|HELLO|hello|Hello World-Foo (Bar|Hello"},
    {"SequenceFilters",
     "{{ messages|length }}|{{ 'héllo'|length }}|{{ [1,2,3]|first }}|{{ [1,2,3]|last }}|{{ 'abc'|first }}|{{ ["
     "3,1,2]|join('-') }}|{{ [1, 'a', none]|join }}|{{ [1,2]|count }}",
     "2|5|1|3|a|3-1-2|1aNone|2"},
    {"ToJson",
     "{{ messages[0]|tojson }}|{{ {'a': [1, 2.5, none, true], 'b': 'é\"\\n'}|tojson }}|{{ {'k': [1, {}], 'e': "
     "[]}|tojson(indent=2) }}|{{ 'x'|tojson }}|{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}|{{ [1, 2]|tojson("
     "separators=(',', ':')) }}|{{ 'é'|tojson(ensure_ascii=true) }}",
     "{\"role\": \"system\", \"content\": \"Be brief.\"}|{\"a\": [1, 2.5, null, true], \"b\": \"é\\\"\\n\"}|{"
     "\n  \"k\": [\n    1,\n    {}\n  ],\n  \"e\": []\n}|\"x\"|{\"a\": 2, \"b\": 1}|[1,2]|\"\\u00e9\""},
    {"DefaultAndString",
     "{{ undefined_var|default('dflt') }}|{{ ''|default('dflt') }}|{{ ''|default('dflt', true) }}|{{ none|defa"
     "ult('dflt') }}|{{ 5|string ~ 'x' }}|{{ [1]|string }}|{{ missing|d('d') }}",
     "dflt||dflt|None|5x|[1]|d"},
    {"SortingFilters",
     "{{ {'b': 1, 'a': 2}|items|list }}|{{ {'b': 1, 'a': 2}|dictsort }}|{{ ['b','A','a']|sort }}|{{ ['b','A','"
     "a']|sort(case_sensitive=true) }}|{{ ['b','A','a']|unique|list }}|{{ [1,2,3]|reverse|list }}|{{ 'abc'|rev"
     "erse }}|{{ [3,1,2]|sort(reverse=true) }}",
     "[('b', 1), ('a', 2)]|[('a', 2), ('b', 1)]|['A', 'a', 'b']|['A', 'a', 'b']|['b', 'A']|[3, 2, 1]|cba|[3, 2"
     ", 1]"},
    {"SelectionFilters",
     "{{ messages|map(attribute='role')|join(',') }}|{{ messages|selectattr('role', 'equalto', 'user')|map(att"
     "ribute='content')|first }}|{{ [1,2,3,4]|select('odd')|list }}|{{ [1,2,3,4]|reject('odd')|list }}|{{ ['a'"
     ",'b']|map('upper')|list }}|{{ messages|rejectattr('role', 'in', ['system'])|list|length }}|{{ [0, 1, '',"
     " 'x']|select|list }}",
     "system,user|Hi there|[1, 3]|[2, 4]|['A', 'B']|1|[1, 'x']"},
    {"NumberFilters",
     "{{ 'a-b-c'|replace('-', '+') }}|{{ 'a\nb'|indent(2) }}|{{ 'a\nb'|indent(2, true) }}|{{ 3.7|int }}|{{ '42"
     "'|int + 1 }}|{{ 'x'|int }}|{{ '2.5'|float * 2 }}|{{ -3|abs }}|{{ 2.5|round }}|{{ 3.5|round }}|{{ 2.567|r"
     "ound(2) }}|{{ [1,2,3]|sum }}|{{ [4,2,8]|min }}|{{ [4,2,8]|max }}|{{ 'a <b>'|e }}|{{ '<ok>'|safe }}|{{ 'o"
     "ne two  three'|wordcount }}",
     "a+b+c|a\n  b|  a\n  b|3|43|0|5.0|3|2.0|4.0|2.57|6|2|8|a &lt;b&gt;|<ok>|3"},
    {"Tests",
     "{{ x is defined }}|{{ messages is defined }}|{{ none is none }}|{{ 'a' is string }}|{{ 1 is string }}|{{"
     " 1 is number }}|{{ 1.5 is float }}|{{ 1 is integer }}|{{ true is boolean }}|{{ {} is mapping }}|{{ [] is"
     " iterable }}|{{ [] is sequence }}|{{ 3 is odd }}|{{ 4 is even }}|{{ 9 is divisibleby 3 }}|{{ 'ab' is low"
     "er }}|{{ 'AB' is upper }}|{{ false is false }}|{{ 0 is false }}|{{ 1 is eq 1 }}|{{ 'a' is in 'cat' }}|{{"
     " x is not defined }}|{{ not x is defined }}|{{ range is callable }}|{{ true is sameas true }}|{{ 2 is gt"
     " 1 }}",
     "False|True|True|True|False|True|True|True|True|True|True|True|True|True|True|True|True|True|False|True|T"
     "rue|True|True|True|True|True"},
    {"StringMethods",
     "{{ 'Hello World'.startswith('Hell') }}|{{ 'abc'.startswith(('x', 'a')) }}|{{ 'abc'.endswith('bc') }}|{{ "
     "'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a-b-c'.rsplit('-', 1) }}|{"
     "{ '  x  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\n\nab\n'.lstrip('\n') }}|{{ 'ab  '.rstrip() }}|{{ 'aa"
     "a'.replace('a', 'b', 2) }}|{{ 'hello world'.title() }}|{{ \"they're\".title() }}|{{ 'ABC'.lower() }}|{{ "
     "'abc'.upper() }}|{{ 'abc'.find('c') }}|{{ 'héllo'.find('l') }}|{{ '-'.join(['a','b']) }}|{{ 'abca'.count"
     "('a') }}|{{ 'hELLO'.capitalize() }}",
     "True|True|True|['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|['a-b', 'c']|x|a|ab\n|ab|bba|Hello World|They"
     "'Re|abc|ABC|2|2|a-b|2|Hello"},
    {"Slicing",
     "{{ 'hello'[1:] }}|{{ 'hello'[::-1] }}|{{ 'hello'[-3:-1] }}|{{ [1,2,3,4][1:3] }}|{{ [1,2,3,4][::2] }}|{{ "
     "[1,2,3][-1] }}|{{ 'héllo'[1] }}|{{ 'héllo'[1:3] }}|{{ messages[1:]|length }}|{{ [1,2,3][5] }}|{{ 'abc'[9"
     "] }}|{{ [1,2,3,4,5][4:0:-2] }}|{{ 'abc'[:100] }}",
     "ello|olleh|ll|[2, 3]|[1, 3]|3|é|él|1|||[5, 3]|abc"},
    {"Arithmetic",
     "{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 7 / 2 }}|{{ 4 / 2 }}|{{ 2 ** 10 }}|{{ 2 ** 3 ** 2"
     " }}|{{ -2 ** 2 }}|{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 'ab' * 3 }}|{{ [1] * 3 }}|{{ [1] + [2] }}|{{ 'a' "
     "~ 1 ~ none ~ true }}|{{ 0.1 + 0.2 }}|{{ 10 / 4 * 2 }}|{{ 7.5 // 2 }}|{{ -7.5 % 2 }}|{{ true + 1 }}",
     "3|-4|1|2|3.5|2.0|1024|64|4|7|9|ababab|[1, 1, 1]|[1, 2]|a1NoneTrue|0.30000000000000004|5.0|3.0|0.5|2"},
    {"Comparisons",
     "{{ 1 == 1.0 }}|{{ '1' == 1 }}|{{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}|{{ 'a' < 'b' }}|{{ 'b' in 'abc' }}|{{ 2 in"
     " [1, 2] }}|{{ 'k' in {'k': 1} }}|{{ 'z' not in 'abc' }}|{{ [1, 2] == [1, 2] }}|{{ {'a': 1} == {'a': 1} }"
     "}|{{ none == none }}|{{ 2 >= 2 }}|{{ 1 != 1 }}",
     "True|False|True|False|True|True|True|True|True|True|True|True|True|False"},
    {"AttributeAndItemAccess",
     "{{ messages[0]['role'] }}|{{ messages[0].role }}|{{ messages[0].missing }}|{{ messages[0]['missing'] is "
     "defined }}|{{ messages[-1].content }}|{{ {'a': {'b': 'deep'}}.a.b }}|{{ {'items': 1}['items'] }}|{{ {'k'"
     ": 'v'}.get('k') }}|{{ {'k': 'v'}.get('x', 'd') }}|{{ {'a': 1}.keys()|list }}|{{ {'a': 1}.values()|list }"
     "}|{{ [[1, 2]][0][1] }}",
     "system|system||False|Hi there|deep|1|v|d|['a']|[1]|2"},
    {"Printing",
     "{{ none }}|{{ true }}|{{ false }}|{{ [1, 'a', none, true] }}|{{ {'a': 1, 'b': 'x'} }}|{{ (1, 2) }}|{{ (1"
     ",) }}|{{ () }}|{{ 'it\\'s' }}|{{ ['it\\'s', \"say \\\"hi\\\"\", 'a\\nb'] }}|{{ undefined_thing }}|{{ 3.0"
     " }}|{{ 1e-5 }}|{{ 1e16 }}|{{ 1e15 }}|{{ 123456789012 }}|{{ -0.0 }}|{{ 2.5e-3 }}",
     "None|True|False|[1, 'a', None, True]|{'a': 1, 'b': 'x'}|(1, 2)|(1,)|()|it's|[\"it's\", 'say \"hi\"', 'a"
     "\\nb']||3.0|1e-05|1e+16|1000000000000000.0|123456789012|-0.0|0.0025"},
    {"StringLiterals",
     "{{ 'tab\\there' }}|{{ \"quote\\\"s\" }}|{{ '\\u00e9\\x41\\101' }}|{{ 'multi' \"part\" }}|{{ 'back\\\\sla"
     "sh' }}|{{ 'unknown \\q escape' }}|{{ 1_000 }}|{{ 0x1F }}|{{ 1.5e2 }}",
     "tab\there|quote\"s|éAA|multipart|back\\slash|unknown \\q escape|1000|31|150.0"},
    {"GenerationBlock", "{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %};{% endfor %}",
     "Be brief.;Hi there;"},
    {"FilterBlock", "{% filter upper %}loud {{ 'text' }}{% endfilter %}", "LOUD TEXT"},
    {"Globals",
     "{{ range(3)|list }}|{{ range(1, 7, 2)|list }}|{{ range(3, 0, -1)|list }}|{{ dict(a=1)['a'] }}|{{ namespa"
     "ce(x=1).x }}|{{ bos_token }}{{ eos_token }}|{{ tools }}|{{ documents is none }}|{{ add_generation_prompt"
     " }}",
     "[0, 1, 2]|[1, 3, 5]|[3, 2, 1]|1|1|<s></s>|None|True|True"},
    {"UndefinedBehaviour",
     "{{ missing }}|{{ missing|length }}|{{ missing ~ 'x' }}|{{ missing == none }}|{{ 'a' in missing }}|{{ mis"
     "sing is none }}|{% if not missing %}falsy{% endif %}|{% for x in missing %}x{% else %}empty{% endfor %}|"
     "{{ missing|default('d') }}|{{ missing|trim }}|{{ missing|first }}|{{ missing|items|list }}|{{ missing|up"
     "per }}|{{ [1, 2][7] is defined }}",
     "|0|x|False|False|False|falsy|empty|d|||[]||False"},
    {"CompactTags", "{%if true%}a{%endif%}{{1}}{{'x'|upper}}{%-if false%}b{%else%}c{%endif-%}   d", "a1Xcd"},
    {"TemplateEndsWithNewline", "text\n", "text"},
    {"TemplateEndsWithTwoNewlines", "text\n\n", "text\n"},
};

class LanguageFeature : public ::testing::TestWithParam<FeatureCase> {};

TEST_P(LanguageFeature, RendersAsJinja2) {
  const FeatureCase& c = GetParam();
  EXPECT_EQ(ChatTemplate(c.source).render(standard_inputs()), c.expected) << c.source;
}

INSTANTIATE_TEST_SUITE_P(Jinja, LanguageFeature, ::testing::ValuesIn(kFeatureCases),
                         [](const ::testing::TestParamInfo<FeatureCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(ChatTemplateFlags, AreBooleanVariables) {
  const ChatTemplate t(
      "{{ enable_thinking is defined }} {{ enable_thinking is false }} {{ add_generation_prompt }} {{ tools }}");
  ChatTemplateInputs in = standard_inputs();
  EXPECT_EQ(t.render(in), "False False True None");
  in.flags = {{"enable_thinking", false}, {"add_generation_prompt", false}, {"tools", true}};
  EXPECT_EQ(t.render(in), "True True False True");
}

TEST(ChatTemplateFlags, StrftimeNowFormatsTheDate) {
  const std::string year = ChatTemplate("{{ strftime_now('%Y') }}").render(standard_inputs());
  ASSERT_EQ(year.size(), 4u);
  EXPECT_GE(std::stoi(year), 2024);
}

}  // namespace
}  // namespace lamina::model

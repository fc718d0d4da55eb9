// The Jinja interpreter construct by construct. Expected strings are what @huggingface/jinja
// renders (jinja_reference_test.cpp runs the reference itself on real templates and on the
// `kAgreed` snippets there); the cases marked "Jinja2" are where strata follows Jinja2 because
// the reference rejects or ignores the construct.
#include "text/jinja/template.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace strata::jinja {
namespace {

using Json = nlohmann::ordered_json;

std::string R(const std::string& tpl, const Json& vars = Json::object()) { return Template(tpl).render(vars); }

// The error message a template gives (parsing or rendering), or a failure when it renders.
std::string E(const std::string& tpl, const Json& vars = Json::object(), uint64_t max_steps = kMaxSteps) {
  try {
    Template(tpl).render(vars, max_steps);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "rendered without an error: " << tpl;
  return "";
}

TEST(Jinja, TextAndLiterals) {
  EXPECT_EQ(R("plain text"), "plain text");
  EXPECT_EQ(R("{{ 'a' }}{{ \"b\" }}{{ 'c' 'd' }}"), "abcd");
  EXPECT_EQ(R("{{ 'x\\ny\\t\\'\\\"\\\\' }}"), "x\ny\t'\"\\");
  EXPECT_EQ(R("{{ '\\u00e9\\x41\\ud83d\\ude00' }}"), "\xC3\xA9" "A\xF0\x9F\x98\x80");
  EXPECT_EQ(R("{{ 1 }}|{{ -2 }}|{{ 1.5 }}|{{ 2.0 }}|{{ -0.0 }}"), "1|-2|1.5|2.0|-0.0");
  EXPECT_EQ(R("{{ true }}|{{ false }}|{{ True }}|{{ none }}|{{ None }}|{{ undefined_name }}"), "true|false|true|||");
  EXPECT_EQ(R("{{ [1, 'a', none, [true]] }}|{{ {'k': 'v', 'n': {}} }}|{{ [] }}"),
            "[1, \"a\", null, [true]]|{\"k\": \"v\", \"n\": {}}|[]");
  EXPECT_EQ(R("{{ (1, 2) }}"), "[1, 2]");  // Jinja2: the reference cannot print a tuple
  EXPECT_EQ(R("{{ x }}", {{"x", {{"a", Json::array({1.5, nullptr})}}}}), "{\"a\": [1.5, null]}");
}

TEST(Jinja, NumbersPrintAsTheReference) {
  EXPECT_EQ(R("{{ 7 / 2 }}|{{ 6 / 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7.0 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}"),
            "3.5|3.0|3|-4|3.0|1|-1");
  EXPECT_EQ(R("{{ 2 ** 10 }}|{{ 2 ** -1 }}|{{ 2 ** 0.5 }}|{{ 2 ** 3 ** 2 }}"), "1024|0.5|1.4142135623730951|64");
  EXPECT_EQ(R("{{ 0.1 + 0.2 }}|{{ 1 / 3 }}|{{ 2 ** 80 }}|{{ 0.000001 * 1 }}|{{ 0.0000001 * 1 }}"),
            "0.30000000000000004|0.3333333333333333|1.2089258196146292e+24|0.000001|1e-7");
  EXPECT_EQ(R("{{ 100000000000000000000 * 10 }}|{{ 10.0 ** 21 }}"), "1e+21|1e+21");
  // JSON numbers are JavaScript numbers: 2.0 is the integer 2, big integers lose digits.
  EXPECT_EQ(R("{{ a }}|{{ b }}|{{ c }}", {{"a", 2.0}, {"b", 12345678901234567890ull}, {"c", 1e300}}),
            "2|12345678901234567000|1e+300");
  EXPECT_EQ(R("{{ 1 + 1.0 }}|{{ 3 * 2 }}|{{ 3 - 0.5 }}|{{ -x }}|{{ +x }}", {{"x", 4}}), "2.0|6|2.5|-4|4");
}

TEST(Jinja, WhitespaceControlAndHuggingFaceTrimming) {
  EXPECT_EQ(R("a  {{- 'b' -}}  c"), "abc");
  EXPECT_EQ(R("a \n {%- if true -%} \n b \n {%- endif %}"), "ab");
  EXPECT_EQ(R("a {#- comment -#} b"), "ab");
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before one.
  EXPECT_EQ(R("{% if true %}\n  yes\n{% endif %}\nend"), "  yes\nend");
  EXPECT_EQ(R("line\n    {% if true %}\n    x\n    {% endif %}\ndone"), "line\n    x\ndone");
  EXPECT_EQ(R("{# c #}\nafter"), "after");
  // Expressions are not trimmed, and one trailing newline of the template is dropped.
  EXPECT_EQ(R("  {{ 'a' }}\nb\n"), "  a\nb");
  EXPECT_EQ(R("a\r\n  {% if true %}b{% endif %}\r\nc"), "a\r\nb\r\nc");
  // transformers' generation markers are removed.
  EXPECT_EQ(R("{% generation %}abc{% endgeneration %}|{%- generation -%}  x  {%- endgeneration -%}  |"), "abc|x|");
}

TEST(Jinja, CommentsAndRaw) {
  EXPECT_EQ(R("a{# {{ not evaluated }} #}b"), "ab");
  EXPECT_EQ(R("{% raw %}{{ not parsed }}{% if %}{% endraw %}"), "{{ not parsed }}{% if %}");  // Jinja2
  EXPECT_EQ(R("{% raw -%}   x   {%- endraw %}"), "x");
}

TEST(Jinja, IfElifElse) {
  const std::string t = "{% if x == 1 %}one{% elif x == 2 %}two{% elif x == 3 %}three{% else %}other{% endif %}";
  EXPECT_EQ(R(t, {{"x", 1}}), "one");
  EXPECT_EQ(R(t, {{"x", 3}}), "three");
  EXPECT_EQ(R(t, {{"x", 9}}), "other");
  EXPECT_EQ(R("{% if not x %}empty{% endif %}", {{"x", Json::array()}}), "empty");
  EXPECT_EQ(R("{{ 'a' if x else 'b' }}|{{ 'a' if not x }}|{{ 1 if false else 2 if false else 3 }}", {{"x", false}}), "b|a|3");
}

TEST(Jinja, ForLoops) {
  Json v = {{"xs", {"a", "b", "c"}}};
  EXPECT_EQ(R("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
              "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ x }};{% endfor %}",
              v),
            "1032truefalse3a;2121falsefalse3b;3210falsetrue3c;");
  EXPECT_EQ(R("{% for x in xs %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }} {% endfor %}", v), "<a>b a<b>c b<c> ");
  EXPECT_EQ(R("{% for x in xs if x != 'b' %}{{ x }}{{ loop.index }}{% endfor %}", v), "a1c2");
  EXPECT_EQ(R("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(R("{% for x in xs if x == 'z' %}x{% else %}none matched{% endfor %}", v), "none matched");
  EXPECT_EQ(R("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
  EXPECT_EQ(R("{% for k in {'a': 1, 'b': 2} %}{{ k }}{% endfor %}"), "ab");
  EXPECT_EQ(R("{% for x in xs %}{% if x == 'b' %}{% continue %}{% endif %}{{ x }}{% endfor %}", v), "ac");
  EXPECT_EQ(R("{% for x in xs %}{% if x == 'b' %}{% break %}{% endif %}{{ x }}{% endfor %}", v), "a");
  EXPECT_EQ(R("{% for r in [[1, 2], [3]] %}{% for c in r %}{{ loop.index }}{% endfor %}/{{ loop.index }} {% endfor %}"),
            "12/1 1/2 ");
  EXPECT_EQ(R("{% for c in 'hé' %}[{{ c }}]{% endfor %}"), "[h][\xC3\xA9]");  // Jinja2
  EXPECT_EQ(R("{% for x in nothing %}x{% else %}else{% endfor %}"), "else");  // Jinja2: undefined is empty
  EXPECT_EQ(R("{% for x in xs[::-1] %}{{ x }}{% endfor %}", v), "cba");
}

TEST(Jinja, SetAndScopes) {
  EXPECT_EQ(R("{% set a = 1 %}{% set b, c = 2, 3 %}{{ a }}{{ b }}{{ c }}"), "123");
  EXPECT_EQ(R("{% set s %}x{{ 1 + 1 }}y{% endset %}[{{ s }}]"), "[x2y]");
  // A for loop's body has its own scope, an if block does not.
  EXPECT_EQ(R("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"
              "{% if true %}{% set x = 3 %}{% endif %}{{ x }}"),
            "13");
  EXPECT_EQ(R("{% set ns = namespace(n=0, items=[]) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}"
              "{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.n }} {{ ns.items }}"),
            "6 [1, 2, 3]");
  EXPECT_EQ(R("{% set ns = namespace() %}{% set ns.a %}block{% endset %}{{ ns.a }}"), "block");
  EXPECT_EQ(R("{{ namespace({'a': 1}, b=2).b }}{{ namespace([['c', 3]]).c }}"), "23");
}

TEST(Jinja, Macros) {
  EXPECT_EQ(R("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
              "{{ greet('a') }} {{ greet('b', '?') }} {{ greet(punct='.', name='c') }}"),
            "Hi a! Hi b? Hi c.");
  EXPECT_EQ(R("{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}"), "[1, 2]{\"k\": 3}");
  EXPECT_EQ(R("{% macro box(t) %}[{{ t }}:{{ caller() }}]{% endmacro %}{% call box('x') %}inside{% endcall %}"),
            "[x:inside]");
  EXPECT_EQ(R("{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}"
              "{% call(v) each([1, 2]) %}<{{ v }}>{% endcall %}"),
            "<1><2>");
  // Recursion, as templates use to print JSON schemas.
  EXPECT_EQ(R("{% macro depth(x) %}{% if x is mapping %}({{ depth(x.c) }}){% else %}{{ x }}{% endif %}{% endmacro %}"
              "{{ depth(v) }}",
              {{"v", {{"c", {{"c", 5}}}}}}),
            "((5))");
  // A macro sees names set later in the scope it was defined in.
  EXPECT_EQ(R("{% macro show() %}{{ late }}{% endmacro %}{% set late = 'L' %}{{ show() }}"), "L");
}

TEST(Jinja, FilterBlock) { EXPECT_EQ(R("{% filter upper %}ab{{ 'c' }}{% endfilter %}"), "ABC"); }

TEST(Jinja, Operators) {
  EXPECT_EQ(R("{{ 'a' ~ 1 ~ 1.0 ~ none_is_not_here ~ [1, 2] }}"), "a111,2");
  EXPECT_EQ(R("{{ 'a' + 'b' }}{{ 'a' + 1 }}{{ [1] + [2] }}"), "aba1[1, 2]");
  EXPECT_EQ(R("{{ 'b' in 'abc' }}{{ 'x' not in 'abc' }}{{ 2 in [1, 2] }}{{ 'k' in {'k': 1} }}{{ 1 in nothing }}"),
            "truetruetruetruefalse");
  EXPECT_EQ(R("{{ 1 == 1.0 }}{{ 'a' != 'b' }}{{ none == nothing }}{{ [] == [] }}{{ 2 > 1 }}{{ 1 >= 2 }}"),
            "truetruetruefalsetruefalse");
  EXPECT_EQ(R("{{ 'a' < 'b' }}{{ 'b' <= 'a' }}"), "truefalse");  // Jinja2
  EXPECT_EQ(R("{{ [] or 'default' }}|{{ 'x' and 'y' }}|{{ 0 and 1 }}|{{ not none }}"), "default|y|0|true");
  EXPECT_EQ(R("{{ '-' * 3 }}"), "---");  // Jinja2
}

TEST(Jinja, SubscriptsAndSlices) {
  Json v = {{"xs", {1, 2, 3, 4}}, {"d", {{"k", {{"n", 7}}}}}};
  EXPECT_EQ(R("{{ xs[0] }}{{ xs[-1] }}{{ xs.1 }}{{ xs[9] }}|{{ d.k.n }}{{ d['k']['n'] }}{{ d.missing }}", v), "142|77");
  EXPECT_EQ(R("{{ xs[1:3] }}{{ xs[:2] }}{{ xs[2:] }}{{ xs[::2] }}{{ xs[::-1] }}{{ xs[-2:] }}", v),
            "[2, 3][1, 2][3, 4][1, 3][4, 3, 2, 1][3, 4]");
  EXPECT_EQ(R("{{ 'héllo'[1:3] }}|{{ 'abc'[-1] }}|{{ 'abc'[::-1] }}|{{ 'abc'.length }}"), "\xC3\xA9l|c|cba|3");
  EXPECT_EQ(R("{{ xs.length }}{{ nothing.attr }}|{{ none.attr }}", v), "4|");
}

TEST(Jinja, Tests) {
  Json v = {{"s", "str"}, {"n", 3}, {"f", 1.5}, {"l", {1}}, {"d", {{"a", 1}}}, {"b", true}, {"z", nullptr}};
  EXPECT_EQ(R("{{ s is string }}{{ n is number }}{{ f is number }}{{ n is integer }}{{ f is float }}{{ l is iterable }}"
              "{{ d is mapping }}{{ l is sequence }}{{ b is boolean }}{{ b is true }}{{ b is false }}{{ z is none }}",
              v),
            "truetruetruetruetruetruetruetruetruetruefalsetrue");
  EXPECT_EQ(R("{{ s is defined }}{{ q is defined }}{{ q is undefined }}{{ z is defined }}{{ d is iterable }}", v),
            "truefalsetruetruefalse");
  EXPECT_EQ(R("{{ 3 is odd }}{{ 4 is even }}{{ 'ab' is lower }}{{ 'AB' is upper }}{{ range is callable }}"),
            "truetruetruetruetrue");
  EXPECT_EQ(R("{{ x is not none }}{{ x is not defined }}", {{"x", 1}}), "truefalse");
  // Test arguments (Jinja2).
  EXPECT_EQ(R("{{ 6 is divisibleby(3) }}{{ 6 is divisibleby 4 }}{{ 1 is eq 1 }}{{ 'a' is equalto('b') }}"
              "{{ 2 is gt(1) }}{{ 'x' is in ['x'] }}"),
            "truefalsetruefalsetruetrue");
}

TEST(Jinja, StringFiltersAndMethods) {
  EXPECT_EQ(R("{{ 'Hello'|upper }} {{ 'Hello'|lower }} {{ 'hello wORLD'|title }} {{ 'hELLO'|capitalize }}"),
            "HELLO hello Hello WORLD HELLO");
  EXPECT_EQ(R("[{{ '  x  '|trim }}][{{ 'xxaxx'|trim('x') }}][{{ '  x  '.strip() }}][{{ ' x '.lstrip() }}][{{ ' x '.rstrip() }}]"),
            "[x][a][x][x ][ x]");
  // With an argument, Python's rule: exactly those characters (the reference ignores it).
  EXPECT_EQ(R("[{{ '\\n\\nabc \\n'.strip('\\n') }}][{{ 'xyax'.lstrip('xy') }}][{{ 'a--'.rstrip('-') }}]"), "[abc ][ax][a]");
  EXPECT_EQ(R("{{ 'a,b,,c'.split(',') }}{{ '  a  b '.split() }}{{ 'a b c'.split(none, 1) }}{{ 'a,b,c'.split(',', 1) }}"),
            "[\"a\", \"b\", \"\", \"c\"][\"a\", \"b\"][\"a\", \"b c\"][\"a\", \"b,c\"]");
  EXPECT_EQ(R("{{ 'a,b,c'.rsplit(',', 1) }}{{ 'abcabc'.replace('b', 'X') }}{{ 'aaa'.replace('a', 'b', 2) }}{{ 'ab'.replace('', '-') }}"),
            "[\"a,b\", \"c\"]aXcaXcbba-a-b-");
  EXPECT_EQ(R("{{ 'abc'.startswith('a') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'abc'.find('c') }}{{ 'abc'.find('z') }}"
              "{{ 'a-b'.count('-') }}{{ ', '.join(['x', 'y']) }}{{ '{} and {name}'.format(1, name='n') }}"),
            "truetrue2-11x, y1 and n");
  EXPECT_EQ(R("{{ 'héllo'|length }} {{ '😀'|length }} {{ 'abc'|count }}"), "5 2 3");
  EXPECT_EQ(R("{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('> ', blank=true) }}"),
            "a\n    b\n\n    c|  a\n  b|a\n> \n> b");
  EXPECT_EQ(R("{{ 'abc'|replace('b', 'B') }}{{ 'abc'|reverse }}{{ 'abc'|first }}{{ 'abc'|last }}{{ 'ab'|list }}{{ 'abc'|join('.') }}"),
            "aBccbaac[\"a\", \"b\"]a.b.c");
  EXPECT_EQ(R("{{ '12px'|int }}{{ 'x'|int }}{{ 'x'|int(7) }}{{ '2.5e1'|float }}{{ ' 3 '|int }}"), "120725.03");
}

TEST(Jinja, ListFilters) {
  EXPECT_EQ(R("{{ [3, 1, 2]|sort }}{{ ['b', 'A', 'c']|sort }}{{ ['b', 'A']|sort(case_sensitive=true) }}{{ [1, 2]|sort(reverse=true) }}"),
            "[1, 2, 3][\"A\", \"b\", \"c\"][\"A\", \"b\"][2, 1]");
  EXPECT_EQ(R("{{ xs|sort(attribute='n')|map(attribute='n')|list }}", {{"xs", {{{"n", 2}}, {{"n", 1}}}}}), "[1, 2]");
  EXPECT_EQ(R("{{ [1, 2]|first }}{{ [1, 2]|last }}{{ []|first }}{{ [1, 2]|reverse }}{{ [1, 2]|length }}{{ [1, 2]|count }}"),
            "12[2, 1]22");
  EXPECT_EQ(R("{{ [1, 2, 2, 'a', 'a', 1.0]|unique }}{{ ['a', 'b']|join }}{{ ['a', 1, none]|join('-') }}"),
            "[1, 2, \"a\"]aba-1-");
  EXPECT_EQ(R("{{ [1, 2, 3]|sum }}{{ [1, 2.5]|sum }}{{ [3, 1, 2]|min }}{{ [3, 1, 2]|max }}{{ ['b', 'A']|min }}"),
            "63.513A");
  EXPECT_EQ(R("{{ [1, 2, 3, 4, 5]|batch(2) }}{{ [1, 2, 3]|batch(2, 0) }}"), "[[1, 2], [3, 4], [5]][[1, 2], [3, 0]]");
  Json v = {{"xs", {{{"t", "text"}, {"v", "A"}}, {{"t", "image"}}, {{"t", "text"}, {"v", "B"}}}}};
  EXPECT_EQ(R("{{ xs|selectattr('t', 'equalto', 'text')|map(attribute='v')|join }}", v), "AB");
  EXPECT_EQ(R("{{ xs|selectattr('v')|length }}{{ xs|rejectattr('v')|length }}{{ xs|map(attribute='v', default='-')|join }}", v),
            "21A-B");
  EXPECT_EQ(R("{{ [1, 2, 3, 4]|select('even')|list }}{{ [1, 2, 3]|reject('odd')|list }}{{ ['a', 'b']|map('upper')|list }}"),
            "[2, 4][2][\"A\", \"B\"]");
  EXPECT_EQ(R("{{ [1, [2]]|string }}{{ [1]|list }}"), "[1, [2]][1]");
}

TEST(Jinja, DictFiltersAndMethods) {
  Json v = {{"d", {{"b", 1}, {"A", 3}, {"c", 2}}}};
  EXPECT_EQ(R("{{ d|items }}|{{ d.keys() }}|{{ d.values() }}|{{ d|length }}", v),
            "[[\"b\", 1], [\"A\", 3], [\"c\", 2]]|[\"b\", \"A\", \"c\"]|[1, 3, 2]|3");
  EXPECT_EQ(R("{{ d.get('b') }}{{ d.get('z', 'dflt') }}{{ d.get('z') }}", v), "1dflt");
  EXPECT_EQ(R("{{ d|dictsort }}|{{ d|dictsort(reverse=true) }}|{{ d.dictsort(by='value') }}", v),
            "[[\"A\", 3], [\"b\", 1], [\"c\", 2]]|[[\"c\", 2], [\"b\", 1], [\"A\", 3]]|[[\"b\", 1], [\"c\", 2], [\"A\", 3]]");
}

TEST(Jinja, ScalarFilters) {
  EXPECT_EQ(R("{{ -3|abs }}{{ -2.5|abs }}{{ 3.7|int }}{{ 3|float }}{{ true|int }}{{ 3|string }}{{ 3.0|string }}{{ false|string }}"),
            "32.533.0133.0false");
  EXPECT_EQ(R("{{ 2.5|round }}{{ 3.5|round }}{{ 2.345|round(2) }}{{ 2.1|round(0, 'ceil') }}{{ 7|round }}"), "2.04.02.353.07");
  EXPECT_EQ(R("{{ x|default('d') }}{{ ''|default('d') }}{{ ''|default('d', true) }}{{ none|default('d') }}{{ y|d('e') }}"),
            "dde");
  EXPECT_EQ(R("{{ x|safe }}{{ 1|safe }}", {{"x", "<b>"}}), "<b>1");
  EXPECT_NE(E("{{ 'a'.upper }}").find("cannot convert a function to a string"), std::string::npos);
}

TEST(Jinja, Tojson) {
  Json v = {{"x", {{"b", "é\n\"\\\x01"}, {"a", {1, 2.5, true, nullptr}}, {"e", Json::object()}, {"l", Json::array()}}}};
  EXPECT_EQ(R("{{ x|tojson }}", v), "{\"b\": \"é\\n\\\"\\\\\\u0001\", \"a\": [1, 2.5, true, null], \"e\": {}, \"l\": []}");
  EXPECT_EQ(R("{{ x|tojson(indent=2) }}", v),
            "{\n  \"b\": \"é\\n\\\"\\\\\\u0001\",\n  \"a\": [\n    1,\n    2.5,\n    true,\n    null\n  ],\n  \"e\": {},\n  \"l\": []\n}");
  EXPECT_EQ(R("{{ 'é😀'|tojson(ensure_ascii=true) }}{{ {'b': 1, 'a': [1, 2]}|tojson(separators=[',', ':']) }}"),
            "\"\\u00e9\\ud83d\\ude00\"{\"b\":1,\"a\":[1,2]}");
  EXPECT_EQ(R("{{ {'b': 1, 'a': 2, 'C': 3}|tojson(sort_keys=true) }}"), "{\"a\": 2, \"b\": 1, \"C\": 3}");
  EXPECT_EQ(R("{{ 2.0|tojson }}{{ nothing|tojson }}{{ 'x'|tojson }}"), "2null\"x\"");
  EXPECT_EQ(R("{{ [1]|tojson(2) }}"), "[\n  1\n]");  // Jinja2: a positional indent
}

TEST(Jinja, Globals) {
  EXPECT_EQ(R("{{ range(3) }}{{ range(1, 4) }}{{ range(5, 0, -2) }}"), "[0, 1, 2][1, 2, 3][5, 3, 1]");
  EXPECT_EQ(R("{{ strftime_now('%Y')|length }}{{ strftime_now('%%') }}"), "4%");
  const std::string err = E("{{ raise_exception('Roles must alternate') }}");
  EXPECT_NE(err.find("the template raised an exception: Roles must alternate (line 1, column 4)"), std::string::npos) << err;
}

TEST(Jinja, UndefinedBehavesAsTheReference) {
  EXPECT_EQ(R("[{{ x }}][{{ x.y.z }}][{{ x ~ 'a' }}][{{ x is defined }}][{{ 'a' in x }}][{{ x|default('d') }}]"),
            "[][][a][false][false][d]");
  EXPECT_NE(E("{{ x + 1 }}").find("cannot apply '+' to an undefined value"), std::string::npos);
  EXPECT_NE(E("{{ x[0] }}").find("cannot index an undefined value with an integer"), std::string::npos);
  EXPECT_NE(E("{{ x() }}").find("cannot call 'x': it is undefined"), std::string::npos);
}

TEST(Jinja, VariablesMustNotHideBuiltins) {
  EXPECT_NE(E("{{ 1 }}", {{"range", 1}}).find("variable 'range' would hide the builtin"), std::string::npos);
  EXPECT_THROW(Template("x").render(Json::array()), Error);
}

// Errors name the construct and its place.
TEST(Jinja, SyntaxErrorsNameTheConstructAndPlace) {
  EXPECT_EQ(E("line one\n{% include 'x.jinja' %}"), "jinja: {% include %} is not supported (line 2, column 1)");
  EXPECT_EQ(E("{% extends 'base' %}"), "jinja: {% extends %} is not supported (line 1, column 1)");
  EXPECT_EQ(E("{% frobnicate %}"), "jinja: unknown statement {% frobnicate %} (line 1, column 1)");
  EXPECT_EQ(E("ab\n  {% if x %}\nno end"), "jinja: {% if %} opened here is never closed (line 2, column 3)");
  EXPECT_EQ(E("{% endfor %}"), "jinja: {% endfor %} without a matching opening tag (line 1, column 1)");
  EXPECT_EQ(E("{{ 1 + }}"), "jinja: unexpected '}}' (expected an expression) (line 1, column 8)");
  EXPECT_EQ(E("{{ 'abc }}"), "jinja: string literal is not closed (line 1, column 4)");
  EXPECT_EQ(E("{# open"), "jinja: comment is not closed with #} (line 1, column 1)");
  EXPECT_EQ(E("{{ a $ b }}"), "jinja: unexpected character '$' (line 1, column 6)");
  EXPECT_EQ(E("{{ '\\é' }}"), "jinja: unknown escape \\é in a string literal (line 1, column 5)");
  EXPECT_EQ(E("{{ '\\u12' }}"), "jinja: invalid escape \\u12'  in a string literal (line 1, column 5)");
  EXPECT_EQ(E("{% break %}"), "jinja: {% break %} outside a loop (line 1, column 1)");
  EXPECT_EQ(E("{% for x in xs recursive %}{% endfor %}"), "jinja: recursive loops are not supported (line 1, column 16)");
  EXPECT_EQ(E("{% set 1 = 2 %}"), "jinja: {% set %} can assign only to names and namespace attributes (line 1, column 8)");
  EXPECT_EQ(E("{% macro m(a, a) %}{% endmacro %}"), "jinja: duplicate parameter 'a' (line 1, column 15)");
  EXPECT_EQ(E("{{ 'é' ~ }}"), "jinja: unexpected '}}' (expected an expression) (line 1, column 10)");  // columns count characters
}

TEST(Jinja, RuntimeErrorsNameTheConstructAndPlace) {
  EXPECT_EQ(E("\n  {{ x|frobnicate }}", {{"x", "s"}}), "jinja: unknown filter 'frobnicate' for a string (line 2, column 8)");
  EXPECT_EQ(E("{{ x is frobnicated }}"), "jinja: unknown test 'frobnicated' (line 1, column 6)");
  EXPECT_EQ(E("{{ 'a' - 1 }}"), "jinja: cannot apply '-' to a string and an integer (line 1, column 8)");
  EXPECT_EQ(E("{{ 1 / 0 }}"), "jinja: division by zero (line 1, column 6)");
  EXPECT_EQ(E("{% for x in 5 %}{% endfor %}"), "jinja: cannot loop over an integer (line 1, column 13)");
  EXPECT_EQ(E("{% set d = {} %}{% set d.k = 1 %}"),
            "jinja: cannot set an attribute of a dict (only namespace() objects can be changed) (line 1, column 25)");
  EXPECT_EQ(E("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"), "jinja: macro 'm' takes at most 1 argument(s), got 2 (line 1, column 34)");
  EXPECT_EQ(E("{{ 'abc'.nosuch() }}"), "jinja: cannot call 'nosuch': it is undefined (line 1, column 9)");
  EXPECT_NE(E("{{ [1, 'a']|sort }}").find("jinja: cannot compare "), std::string::npos);
  EXPECT_EQ(E("{{ {'a': 1}|items|sort }}{{ [none]|sort }}{{ 1 }}{{ [1, none]|sort }}"),
            "jinja: cannot compare none with integer (line 1, column 63)");
}

TEST(Jinja, HostileTemplatesFailInsteadOfHanging) {
  // Unbounded recursion.
  EXPECT_NE(E("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("macro calls nested more than 64 levels deep"),
            std::string::npos);
  EXPECT_NE(E("{% macro f() %}{% call f() %}{% endcall %}{% endmacro %}{{ f() }}").find("nested more than"), std::string::npos);
  // Endless work.
  EXPECT_NE(E("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", Json::object(), 100000)
                .find("ran for more than 100000 steps"),
            std::string::npos);
  EXPECT_NE(E("{{ range(100000000) }}").find("range() of more than"), std::string::npos);
  // Exponential output.
  EXPECT_NE(E("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}")
                .find("longer than"),
            std::string::npos);
  EXPECT_NE(E("{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}")
                .find("list longer than"),
            std::string::npos);
  // Deep nesting in the source and in values.
  EXPECT_NE(E("{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}").find("nested more than"), std::string::npos);
  EXPECT_NE(E("{{ " + std::string(400, '[') + std::string(400, ']') + " }}").find("nested more than"), std::string::npos);
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  EXPECT_NE(E(chain + " }}").find("expression nested more than"), std::string::npos);
  std::string nots = "{{ ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_NE(E(nots + "1 }}").find("nested more than"), std::string::npos);
  std::string ifs;
  for (int i = 0; i < 300; ++i) ifs += "{% if true %}";
  EXPECT_NE(E(ifs).find("nested more than"), std::string::npos);
  EXPECT_NE(E("{% set ns = namespace(v=[]) %}{% for i in range(1000) %}{% set ns.v = [ns.v] %}{% endfor %}").find("levels deep"),
            std::string::npos);
  // A namespace that contains itself prints as an error, and is released.
  EXPECT_NE(E("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}").find("levels deep"), std::string::npos);
  Json deep = Json::array();
  for (int i = 0; i < 1000; ++i) deep = Json::array({deep});
  EXPECT_NE(E("{{ x }}", {{"x", deep}}).find("levels deep"), std::string::npos);
}

}  // namespace
}  // namespace strata::jinja

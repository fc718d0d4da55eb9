#include "grammar/tool_call_grammar.h"

#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "grammar/json_schema.h"
#include "text/dsv4_tokens.h"

namespace strata::grammar {
namespace {

using json = nlohmann::ordered_json;
using Seq = GrammarBuilder::Seq;

class ToolCallBuilder {
 public:
  ToolCallBuilder(const AddedTokenLookup& added) : added_(added), rules_(b_) {}

  Seq marker(std::string_view text) {
    if (added_)
      if (auto id = added_(text)) return {b_.token(*id)};
    return b_.literal(text);
  }

  GrammarBuilder& b() { return b_; }
  JsonSchemaRules& rules() { return rules_; }

  // Raw text of a DSML string parameter: valid UTF-8 in which '<' is never followed by '/'
  // (that would start the closing tag).
  Elem raw_text() {
    if (raw_) return b_.ref(*raw_);
    ByteSet ascii, not_slash;
    ascii.add_range(0x20, 0x7f);
    ascii.add('\n');
    ascii.add('\t');
    ascii.add('\r');
    ascii.bits[0] &= ~(uint64_t(1) << '<');
    not_slash = ascii;
    not_slash.bits[0] &= ~(uint64_t(1) << '/');
    std::vector<Seq> chars{{b_.set(ascii)}, {b_.byte('<'), b_.set(not_slash)}};
    for (Seq& m : b_.utf8_multibyte()) chars.push_back(std::move(m));
    const uint32_t ch = b_.rule("raw-char", chars);
    raw_ = b_.repeat({b_.ref(ch)}, 0, -1, "raw-text").arg;
    return b_.ref(*raw_);
  }

 private:
  const AddedTokenLookup& added_;
  GrammarBuilder b_;
  JsonSchemaRules rules_;
  std::optional<uint32_t> raw_;
};

bool is_string_schema(const json& s) {
  if (!s.is_object()) return false;
  if (s.contains("type")) return s["type"] == "string";
  for (const char* key : {"enum", "const"}) {
    if (!s.contains(key)) continue;
    const json values = s[key].is_array() && std::string(key) == "enum" ? s[key] : json::array({s[key]});
    bool all = !values.empty();
    for (const json& v : values) all = all && v.is_string();
    return all;
  }
  return false;
}

// name -> its OpenAI "parameters" schema; a function without one takes no arguments: {}.
std::vector<std::pair<std::string, json>> functions_of(const json& spec) {
  if (!spec.contains("tools") || !spec["tools"].is_array() || spec["tools"].empty())
    throw Error("tool-call grammar: no tools");
  std::vector<std::pair<std::string, json>> out;
  for (const json& t : spec["tools"]) {
    if (!t.is_object() || !t.contains("function") || !t["function"].contains("name") || !t["function"]["name"].is_string())
      throw Error("tool-call grammar: each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
    const json& f = t["function"];
    json params = f.contains("parameters") && !f["parameters"].is_null()
                      ? f["parameters"]
                      : json{{"type", "object"}, {"properties", json::object()}};
    out.emplace_back(f["name"].get<std::string>(), std::move(params));
  }
  return out;
}

Elem dsml_invoke(ToolCallBuilder& t, const std::string& name, const json& params, size_t index) {
  GrammarBuilder& b = t.b();
  const std::string dsml(dsv4::kDsml);
  const std::string tag = "invoke-" + std::to_string(index);
  if (!params.is_object() || (params.contains("type") && params["type"] != "object"))
    throw Error("tool '" + name + "': DSML calls need an object 'parameters' schema");
  const json props = params.contains("properties") ? params["properties"] : json::object();
  if (!props.is_object()) throw Error("tool '" + name + "': 'properties' must be an object");
  std::set<std::string> required;
  if (params.contains("required")) {
    if (!params["required"].is_array()) throw Error("tool '" + name + "': 'required' must be an array of names");
    for (const json& r : params["required"]) {
      if (!r.is_string()) throw Error("tool '" + name + "': 'required' must be an array of names");
      required.insert(r.get<std::string>());
    }
  }
  for (const auto& r : required)
    if (!props.contains(r)) throw Error("tool '" + name + "': required parameter '" + r + "' is not in 'properties'");
  std::vector<Seq> items;
  std::vector<bool> req;
  for (auto it = props.begin(); it != props.end(); ++it) {
    const bool raw = is_string_schema(it.value());
    if (raw) {
      // Raw text carries no JSON: still, every keyword is checked, and a length cannot be kept.
      (void)t.rules().value(it.value(), tag + "-" + it.key() + "-checked");
      if (it.value().contains("minLength") || it.value().contains("maxLength"))
        throw Error("tool '" + name + "' parameter '" + it.key() +
                    "': DSML writes string parameters as raw text, so minLength/maxLength cannot be enforced");
    }
    Seq s = b.literal("<" + dsml + "parameter name=\"" + it.key() + "\" string=\"" + (raw ? "true" : "false") + "\">");
    if (raw) {
      // An enum of strings is its raw values; a free string is raw text.
      const json& v = it.value();
      if (v.contains("enum") || v.contains("const")) {
        std::vector<Seq> alts;
        for (const json& e : v.contains("enum") ? v["enum"] : json::array({v["const"]})) {
          if (!e.is_string())
            throw Error("tool '" + name + "' parameter '" + it.key() + "': a string parameter's enum values must be strings");
          alts.push_back(b.literal(e.get<std::string>()));
        }
        s.push_back(b.ref(b.rule(tag + "-" + it.key() + "-enum", alts)));
      } else {
        s.push_back(t.raw_text());
      }
    } else {
      s.push_back(t.rules().value(it.value(), tag + "-" + it.key()));
    }
    const Seq close = b.literal("</" + dsml + "parameter>");
    s.insert(s.end(), close.begin(), close.end());
    items.push_back(std::move(s));
    req.push_back(required.count(it.key()) > 0);
  }
  // Parameters joined by "\n", each optional one present or not (the object chain of json_schema).
  const size_t n = items.size();
  std::vector<uint32_t> S(n + 1), F(n + 1, UINT32_MAX);
  S[n] = b.rule(tag + "-end", {{}});
  for (size_t i = n; i-- > 0;) {
    Seq with{b.byte('\n')};
    with.insert(with.end(), items[i].begin(), items[i].end());
    with.push_back(b.ref(S[i + 1]));
    S[i] = req[i] ? b.rule(tag + "-then" + std::to_string(i), {with})
                  : b.rule(tag + "-then" + std::to_string(i), {with, {b.ref(S[i + 1])}});
    Seq first = items[i];
    first.push_back(b.ref(S[i + 1]));
    std::vector<Seq> alts{first};
    if (!req[i] && F[i + 1] != UINT32_MAX) alts.push_back({b.ref(F[i + 1])});
    F[i] = b.rule(tag + "-first" + std::to_string(i), alts);
  }
  Seq open = b.literal("<" + dsml + "invoke name=\"" + name + "\">\n");
  const Seq close = b.literal("\n</" + dsml + "invoke>");
  std::vector<Seq> alts;
  if (F[0] != UINT32_MAX) {
    Seq s = open;
    s.push_back(b.ref(F[0]));
    s.insert(s.end(), close.begin(), close.end());
    alts.push_back(s);
  }
  if (required.empty()) {  // no parameters at all: "...\">\n\n</｜DSML｜invoke>"
    Seq s = open;
    s.insert(s.end(), close.begin(), close.end());
    alts.push_back(s);
  }
  return b.ref(b.rule(tag, alts));
}

Elem hermes_call(ToolCallBuilder& t, const std::string& name, const json& params, size_t index) {
  GrammarBuilder& b = t.b();
  Seq s = t.marker("<tool_call>");
  const Seq head = b.literal("\n{\"name\": " + json(name).dump() + ", \"arguments\": ");
  s.insert(s.end(), head.begin(), head.end());
  s.push_back(t.rules().value(params, "call-" + std::to_string(index) + "-arguments"));
  const Seq tail = b.literal("}\n");
  s.insert(s.end(), tail.begin(), tail.end());
  const Seq close = t.marker("</tool_call>");
  s.insert(s.end(), close.begin(), close.end());
  return b.ref(b.rule("call-" + std::to_string(index), {s}));
}

}  // namespace

Grammar tool_call_grammar(const json& spec, const AddedTokenLookup& added_token) {
  if (!spec.is_object() || !spec.contains("syntax") || !spec["syntax"].is_string())
    throw Error("tool-call grammar: the spec needs a 'syntax'");
  const std::string syntax = spec["syntax"].get<std::string>();
  const bool parallel = spec.value("parallel", true);
  const auto fns = functions_of(spec);
  // DSML blocks are named tool_calls (DeepSeek-V4) or function_calls (DeepSeek-V3.2).
  const bool dsml = syntax == "dsml" || syntax == "dsml_function_calls";
  const dsv4::DsmlBlock& block = syntax == "dsml" ? dsv4::kToolCallsBlock : dsv4::kFunctionCallsBlock;
  ToolCallBuilder t(added_token);
  GrammarBuilder& b = t.b();
  std::vector<GrammarBuilder::Seq> calls;
  for (size_t i = 0; i < fns.size(); ++i) {
    if (dsml) calls.push_back({dsml_invoke(t, fns[i].first, fns[i].second, i)});
    else if (syntax == "hermes") calls.push_back({hermes_call(t, fns[i].first, fns[i].second, i)});
    else throw Error("tool-call grammar: unknown syntax '" + syntax + "'");
  }
  const Elem call = b.ref(b.rule("call", calls));
  const Elem all = b.separated({call}, b.literal("\n"), 1, parallel ? -1 : 1, "calls");
  Seq root;
  if (dsml) {
    root = b.literal("\n\n");
    const Seq open = t.marker(block.open);
    root.insert(root.end(), open.begin(), open.end());
    root.push_back(b.byte('\n'));
    root.push_back(all);
    root.push_back(b.byte('\n'));
    const Seq close = t.marker(block.close);
    root.insert(root.end(), close.begin(), close.end());
  } else {
    root = {all};
  }
  return b.finish(b.rule("root", {root}));
}

}  // namespace strata::grammar

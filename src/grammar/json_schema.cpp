#include "grammar/json_schema.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace strata::grammar {
namespace {

using json = nlohmann::ordered_json;
using Seq = GrammarBuilder::Seq;

const std::set<std::string> kAnnotations = {"title",    "description", "default", "examples",   "$schema",
                                            "$id",      "$comment",    "$defs",   "definitions", "deprecated",
                                            "readOnly", "writeOnly"};
const std::set<std::string> kHandled = {"type",       "enum",     "const",    "anyOf",     "oneOf",
                                        "$ref",       "properties", "required", "additionalProperties",
                                        "items",      "minItems", "maxItems", "minLength", "maxLength"};

}  // namespace

class SchemaCompiler {
 public:
  explicit SchemaCompiler(GrammarBuilder& b) : b_(b) { add_primitives(); }

  // The element of `root`'s JSON texts; its $refs resolve within `root`, which must outlive
  // the grammar's building.
  Elem compile(const json& root, const std::string& name) {
    root_ = &root;
    refs_.clear();
    return schema(root, "#", name);
  }

  Elem any_object() const { return ref(object_any_); }

 private:
  Elem ref(uint32_t r) const { return b_.ref(r); }

  [[noreturn]] static void fail(const std::string& path, const std::string& what) {
    throw Error("json schema at " + path + ": " + what);
  }

  void add_primitives() {
    ByteSet indent;
    indent.add(' ');
    indent.add('\t');
    const Elem spaces = b_.repeat({b_.set(indent)}, 0, 20, "indent");
    ws_ = b_.rule("ws", {{}, b_.literal(" "), {b_.byte('\n'), spaces}});

    // String characters: unescaped printable ASCII but '"' and '\', or a well-formed UTF-8
    // sequence, or an escape.
    ByteSet ascii, hex, esc;
    ascii.add_range(0x20, 0x7f);
    ascii.bits[0] &= ~(uint64_t(1) << '"');
    ascii.bits[1] &= ~(uint64_t(1) << ('\\' - 64));
    hex.add_range('0', '9');
    hex.add_range('a', 'f');
    hex.add_range('A', 'F');
    for (char c : std::string("\"\\/bfnrt")) esc.add(uint8_t(c));
    std::vector<Seq> chars{{b_.set(ascii)}};
    for (Seq& m : b_.utf8_multibyte()) chars.push_back(std::move(m));
    chars.push_back({b_.byte('\\'), b_.set(esc)});
    chars.push_back({b_.byte('\\'), b_.byte('u'), b_.set(hex), b_.set(hex), b_.set(hex), b_.set(hex)});
    char_ = b_.rule("char", chars);
    string_ = string_rule(0, -1, "string");

    auto range = [&](uint8_t lo, uint8_t hi) {
      ByteSet s;
      s.add_range(lo, hi);
      return b_.set(s);
    };
    const Elem digit = range('0', '9');
    const Elem int_part = ref(b_.rule(
        "integral-part", {b_.literal("0"), {range('1', '9'), b_.repeat({digit}, 0, 15, "integral-digits")}}));
    const Elem minus = b_.optional(b_.literal("-"), "minus");
    integer_ = b_.rule("integer", {{minus, int_part}});
    const Elem frac = b_.optional({b_.byte('.'), b_.repeat({digit}, 1, 16, "fraction-digits")}, "fraction");
    ByteSet e, sign;
    e.add('e');
    e.add('E');
    sign.add('+');
    sign.add('-');
    const Elem exp = b_.optional(
        {b_.set(e), b_.optional({b_.set(sign)}, "exponent-sign"), b_.repeat({digit}, 1, 3, "exponent-digits")},
        "exponent");
    number_ = b_.rule("number", {{minus, int_part, frac, exp}});
    boolean_ = b_.rule("boolean", {b_.literal("true"), b_.literal("false")});
    null_ = b_.rule("null", {b_.literal("null")});

    value_ = b_.declare("value");
    object_any_ = object_rule({}, {}, Seq{ref(value_)}, "object");
    array_any_ = array_rule({ref(value_)}, 0, -1, "array");
    b_.define(value_, {{ref(object_any_)},
                       {ref(array_any_)},
                       {ref(string_)},
                       {ref(number_)},
                       {ref(boolean_)},
                       {ref(null_)}});
  }

  uint32_t string_rule(int64_t min, int64_t max, const std::string& name) {
    Seq s{b_.byte('"')};
    if (min > 0 || max >= 0) s.push_back(b_.repeat({ref(char_)}, min, max, name + "-chars"));
    else s.push_back(b_.repeat({ref(char_)}, 0, -1, name + "-chars"));
    s.push_back(b_.byte('"'));
    return b_.rule(name, {s});
  }

  // props: (name, value) in order; required names; extra: the value of additional properties
  // (empty: none allowed).
  uint32_t object_rule(const std::vector<std::pair<std::string, Elem>>& props, const std::set<std::string>& required,
                       const Seq& extra, const std::string& name) {
    const size_t n = props.size();
    const Elem W = ref(ws_);
    std::vector<Seq> kv(n);
    for (size_t i = 0; i < n; ++i) {
      kv[i] = b_.literal(json(props[i].first).dump());
      kv[i].push_back(b_.byte(':'));
      kv[i].push_back(W);
      kv[i].push_back(props[i].second);
    }
    // S[i]: the properties from i on after at least one was written; F[i]: from i on, at
    // least one still to write (the first without a comma).
    std::vector<uint32_t> S(n + 1), F(n + 1, UINT32_MAX);
    if (!extra.empty()) {
      Seq ekv{ref(string_), b_.byte(':'), W};
      ekv.insert(ekv.end(), extra.begin(), extra.end());
      const uint32_t more = b_.declare(name + "-extra-rest");
      Seq again{b_.byte(','), W};
      again.insert(again.end(), ekv.begin(), ekv.end());
      again.push_back(ref(more));
      b_.define(more, {again, {}});
      S[n] = more;
      Seq first = ekv;
      first.push_back(ref(more));
      F[n] = b_.rule(name + "-extra", {first});
    } else {
      S[n] = b_.rule(name + "-end", {{}});
    }
    for (size_t i = n; i-- > 0;) {
      const std::string tag = name + "-" + std::to_string(i);
      Seq with{b_.byte(','), W};
      with.insert(with.end(), kv[i].begin(), kv[i].end());
      with.push_back(ref(S[i + 1]));
      const bool req = required.count(props[i].first) > 0;
      S[i] = req ? b_.rule(tag + "-then", {with}) : b_.rule(tag + "-then", {with, {ref(S[i + 1])}});
      Seq first = kv[i];
      first.push_back(ref(S[i + 1]));
      std::vector<Seq> alts{first};
      if (!req && F[i + 1] != UINT32_MAX) alts.push_back({ref(F[i + 1])});
      F[i] = b_.rule(tag + "-first", alts);
    }
    std::vector<Seq> alts;
    if (F[0] != UINT32_MAX) alts.push_back({b_.byte('{'), W, ref(F[0]), W, b_.byte('}')});
    if (required.empty()) alts.push_back({b_.byte('{'), W, b_.byte('}')});
    return b_.rule(name, alts);
  }

  uint32_t array_rule(const Seq& item, int64_t min, int64_t max, const std::string& name) {
    const Elem W = ref(ws_);
    Seq sep{b_.byte(','), W};
    std::vector<Seq> alts;
    if (max != 0) {
      const Elem items = b_.separated(item, sep, std::max<int64_t>(min, 1), max, name + "-items");
      alts.push_back({b_.byte('['), W, items, W, b_.byte(']')});
    }
    if (min == 0) alts.push_back({b_.byte('['), W, b_.byte(']')});
    return b_.rule(name, alts);
  }

  static int64_t count(const json& s, const char* key, const std::string& path) {
    if (!s.contains(key)) return -1;
    const json& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0) fail(path, std::string("'") + key + "' must be a non-negative integer");
    return v.get<int64_t>();
  }

  Elem literals(const std::vector<json>& values, const std::string& name) {
    std::vector<Seq> alts;
    for (const json& v : values) alts.push_back(b_.literal(v.dump()));
    return ref(b_.rule(name, alts));
  }

  Elem resolve(const std::string& target, const std::string& path) {
    if (auto it = refs_.find(target); it != refs_.end()) return ref(it->second);
    if (target.empty() || target[0] != '#') fail(path, "only '$ref' within the document ('#/...') is supported, not '" + target + "'");
    const json* t = root_;
    if (target.size() > 1) {
      try {
        t = &root_->at(json::json_pointer(target.substr(1)));
      } catch (const std::exception&) {
        fail(path, "'$ref' '" + target + "' points at nothing in the document");
      }
    }
    const std::string name = "ref-" + std::to_string(refs_.size());
    const uint32_t r = b_.declare(name);
    refs_.emplace(target, r);
    b_.define(r, {{schema(*t, target, name + "-body")}});
    return ref(r);
  }

  Elem typed(const std::string& type, const json& s, const std::string& path, const std::string& name) {
    if (type == "string") {
      const int64_t lo = count(s, "minLength", path), hi = count(s, "maxLength", path);
      if (lo < 0 && hi < 0) return ref(string_);
      if (hi >= 0 && lo > hi) fail(path, "'minLength' is greater than 'maxLength'");
      return ref(string_rule(std::max<int64_t>(lo, 0), hi, name));
    }
    if (type == "integer") return ref(integer_);
    if (type == "number") return ref(number_);
    if (type == "boolean") return ref(boolean_);
    if (type == "null") return ref(null_);
    if (type == "array") {
      const int64_t lo = count(s, "minItems", path), hi = count(s, "maxItems", path);
      if (hi >= 0 && lo > hi) fail(path, "'minItems' is greater than 'maxItems'");
      const Elem item = s.contains("items") ? schema(s["items"], path + "/items", name + "-item") : ref(value_);
      if (lo <= 0 && hi < 0 && !s.contains("items")) return ref(array_any_);
      return ref(array_rule({item}, std::max<int64_t>(lo, 0), hi, name));
    }
    if (type == "object") {
      const json* props = s.contains("properties") ? &s["properties"] : nullptr;
      if (props && !props->is_object()) fail(path, "'properties' must be an object");
      std::set<std::string> required;
      if (s.contains("required")) {
        if (!s["required"].is_array()) fail(path, "'required' must be an array of names");
        for (const json& r : s["required"]) {
          if (!r.is_string()) fail(path, "'required' must be an array of names");
          if (!props || !props->contains(r.get<std::string>()))
            fail(path, "required property '" + r.get<std::string>() + "' is not in 'properties'");
          required.insert(r.get<std::string>());
        }
      }
      Seq extra;
      if (s.contains("additionalProperties")) {
        const json& ap = s["additionalProperties"];
        if (ap.is_boolean()) {
          if (ap.get<bool>()) extra = {ref(value_)};
        } else if (ap.is_object()) {
          extra = {schema(ap, path + "/additionalProperties", name + "-additional")};
        } else {
          fail(path, "'additionalProperties' must be a boolean or a schema");
        }
      } else if (!props) {
        extra = {ref(value_)};  // a bare object type: any object
      }
      if (!props && !extra.empty() && extra[0].arg == value_ && extra.size() == 1) return ref(object_any_);
      std::vector<std::pair<std::string, Elem>> list;
      if (props)
        for (auto it = props->begin(); it != props->end(); ++it)
          list.emplace_back(it.key(), schema(it.value(), path + "/properties/" + it.key(), name + "-" + it.key()));
      return ref(object_rule(list, required, extra, name));
    }
    fail(path, "unknown type '" + type + "'");
  }

  Elem schema(const json& s, const std::string& path, const std::string& name) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(path, "the schema 'false' accepts nothing");
      return ref(value_);
    }
    if (!s.is_object()) fail(path, "a schema must be an object or a boolean");
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!kHandled.count(it.key()) && !kAnnotations.count(it.key()))
        fail(path, "the keyword '" + it.key() + "' is not supported in structured output");
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) fail(path, "'$ref' must be a string");
      return resolve(s["$ref"].get<std::string>(), path);
    }
    if (s.contains("const")) return literals({s["const"]}, name + "-const");
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty()) fail(path, "'enum' must be a non-empty array");
      return literals(std::vector<json>(s["enum"].begin(), s["enum"].end()), name + "-enum");
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (s.contains(key)) {
        const json& list = s[key];
        for (const char* other : {"type", "properties", "items", "additionalProperties", "required"})
          if (s.contains(other))
            fail(path, std::string("'") + key + "' beside '" + other + "' is not supported: put it in each branch");
        if (!list.is_array() || list.empty()) fail(path, std::string("'") + key + "' must be a non-empty array");
        std::vector<Seq> alts;
        for (size_t i = 0; i < list.size(); ++i)
          alts.push_back({schema(list[i], path + "/" + key + "/" + std::to_string(i), name + "-" + std::to_string(i))});
        return ref(b_.rule(name + "-any", alts));
      }
    if (s.contains("type")) {
      const json& t = s["type"];
      if (t.is_string()) return typed(t.get<std::string>(), s, path, name);
      if (!t.is_array() || t.empty()) fail(path, "'type' must be a string or a non-empty array of strings");
      std::vector<Seq> alts;
      for (const json& one : t) {
        if (!one.is_string()) fail(path, "'type' must be a string or a non-empty array of strings");
        alts.push_back({typed(one.get<std::string>(), s, path, name + "-" + one.get<std::string>())});
      }
      return ref(b_.rule(name + "-types", alts));
    }
    if (s.contains("properties") || s.contains("additionalProperties")) return typed("object", s, path, name);
    if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) return typed("array", s, path, name);
    if (s.contains("minLength") || s.contains("maxLength")) return typed("string", s, path, name);
    return ref(value_);
  }

  const json* root_ = nullptr;
  GrammarBuilder& b_;
  uint32_t ws_ = 0, char_ = 0, string_ = 0, integer_ = 0, number_ = 0, boolean_ = 0, null_ = 0, value_ = 0,
           object_any_ = 0, array_any_ = 0;
  std::map<std::string, uint32_t> refs_;
};

JsonSchemaRules::JsonSchemaRules(GrammarBuilder& b) : impl_(std::make_unique<SchemaCompiler>(b)) {}
JsonSchemaRules::~JsonSchemaRules() = default;
Elem JsonSchemaRules::value(const json& schema, const std::string& name) { return impl_->compile(schema, name); }
Elem JsonSchemaRules::any_object() const { return impl_->any_object(); }

Grammar grammar_from_json_schema(const json& schema) {
  GrammarBuilder b;
  JsonSchemaRules rules(b);
  const Elem top = rules.value(schema, "root-value");
  return b.finish(b.rule("root", {{top}}));
}

Grammar json_object_grammar() {
  GrammarBuilder b;
  JsonSchemaRules rules(b);
  return b.finish(b.rule("root", {{rules.any_object()}}));
}

}  // namespace strata::grammar

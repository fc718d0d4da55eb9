#include "text/jinja/value.h"

#include <algorithm>
#include <cmath>

#include "text/jinja/error.h"
#include "text/jinja/js_text.h"
#include "text/jinja/limits.h"

namespace strata::jinja {
namespace {

enum class JsKind { kUndefined, kBool, kNumber, kString, kObject };

JsKind js_kind(const Value& v) {
  switch (v.type()) {
    // The reference makes none with no underlying value, so JavaScript sees undefined in both.
    case Value::Type::kUndefined:
    case Value::Type::kNone: return JsKind::kUndefined;
    case Value::Type::kBool: return JsKind::kBool;
    case Value::Type::kInt:
    case Value::Type::kFloat: return JsKind::kNumber;
    case Value::Type::kString: return JsKind::kString;
    default: return JsKind::kObject;
  }
}

void check_depth(int depth) {
  if (depth > kMaxValueDepth) fail("value nested more than " + std::to_string(kMaxValueDepth) + " levels deep");
}

std::string display(const Value& v, int depth);

std::string joined_items(const Value& v, int depth) {
  std::string s;
  bool first = true;
  for (const Value& e : v.items()) {
    if (!first) s += ',';
    first = false;
    s += display(e, depth + 1);
  }
  return s;
}

std::string display(const Value& v, int depth) {
  check_depth(depth);
  switch (v.type()) {
    case Value::Type::kUndefined:
    case Value::Type::kNone: return "undefined";
    case Value::Type::kBool: return v.as_bool() ? "true" : "false";
    case Value::Type::kInt: return js_number(v.num());
    case Value::Type::kFloat: return js_float(v.num());
    case Value::Type::kString: return v.str();
    case Value::Type::kArray:
    case Value::Type::kObject: {
      std::string out;
      to_json(v, JsonOptions{}, /*undefined_as_null=*/false, out, depth);
      return out;
    }
    case Value::Type::kFunction: break;
  }
  fail("cannot convert a function to a string");
}

// ToPrimitive of a list or dict, as JavaScript's == does before comparing with a string or number.
std::string object_primitive(const Value& v, int depth) {
  if (v.is_array()) return joined_items(v, depth);
  if (v.is_object()) return "[object Map]";
  fail("cannot compare a function");
}

bool loose(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  const JsKind ka = js_kind(a), kb = js_kind(b);
  if (ka == kb) {
    switch (ka) {
      case JsKind::kUndefined: return true;
      case JsKind::kBool: return a.as_bool() == b.as_bool();
      case JsKind::kNumber: return a.num() == b.num();
      case JsKind::kString: return a.str() == b.str();
      case JsKind::kObject: return a.same_object(b);
    }
  }
  if (ka == JsKind::kUndefined || kb == JsKind::kUndefined) return false;
  if (ka == JsKind::kNumber && kb == JsKind::kString) return a.num() == js_string_to_number(b.str());
  if (ka == JsKind::kString && kb == JsKind::kNumber) return js_string_to_number(a.str()) == b.num();
  if (ka == JsKind::kBool) return loose(Value::integer(a.as_bool() ? 1 : 0), b, depth);
  if (kb == JsKind::kBool) return loose(a, Value::integer(b.as_bool() ? 1 : 0), depth);
  if (ka == JsKind::kObject) return loose(Value::string(object_primitive(a, depth)), b, depth + 1);
  if (kb == JsKind::kObject) return loose(a, Value::string(object_primitive(b, depth)), depth + 1);
  return false;
}

// Key order for sort_keys. JavaScript's localeCompare orders letters case-insensitively with
// lower case first on a tie; this applies that to ASCII and byte order to the rest.
bool key_less(const std::string& a, const std::string& b) {
  auto fold = [](unsigned char c) { return c >= 'A' && c <= 'Z' ? c + 32 : int(c); };
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    int x = fold(static_cast<unsigned char>(a[i])), y = fold(static_cast<unsigned char>(b[i]));
    if (x != y) return x < y;
  }
  if (a.size() != b.size()) return a.size() < b.size();
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return a[i] > b[i];  // lower case (the larger byte) first
  return false;
}

}  // namespace

const Value* ObjectData::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

void ObjectData::set(std::string key, Value v) {
  if (kind != Kind::kNamespace) {
    depth = std::max(depth, 1 + v.depth());
    if (depth > kMaxValueDepth) fail("value nested more than " + std::to_string(kMaxValueDepth) + " levels deep");
  }
  for (auto& [k, old] : entries)
    if (k == key) {
      old = std::move(v);
      return;
    }
  entries.emplace_back(std::move(key), std::move(v));
}

const Value* CallArgs::kwarg(std::string_view name) const {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return nullptr;
}

const Value* CallArgs::arg(size_t i, std::string_view name) const {
  if (i < pos.size()) return &pos[i];
  return kwarg(name);
}

Value Value::boolean(bool b) {
  Value v(Type::kBool);
  v.b_ = b;
  return v;
}

Value Value::integer(double x) {
  Value v(Type::kInt);
  v.num_ = x;
  return v;
}

Value Value::floating(double x) {
  Value v(Type::kFloat);
  v.num_ = x;
  return v;
}

Value Value::string(std::string s) {
  if (s.size() > kMaxStringBytes) fail("string longer than " + std::to_string(kMaxStringBytes) + " bytes");
  Value v(Type::kString);
  static const std::shared_ptr<std::string> kEmpty = std::make_shared<std::string>();
  v.ptr_ = s.empty() ? kEmpty : std::make_shared<std::string>(std::move(s));
  return v;
}

Value Value::array(std::vector<Value> items, bool tuple) {
  if (items.size() > kMaxListItems) fail("list longer than " + std::to_string(kMaxListItems) + " items");
  Value v(Type::kArray);
  auto data = std::make_shared<ArrayData>();
  int depth = 1;
  for (const Value& e : items) depth = std::max(depth, 1 + e.depth());
  if (depth > kMaxValueDepth) fail("value nested more than " + std::to_string(kMaxValueDepth) + " levels deep");
  data->items = std::move(items);
  data->tuple = tuple;
  data->depth = depth;
  v.ptr_ = std::move(data);
  return v;
}

Value Value::object(ObjectData::Kind kind) {
  Value v(Type::kObject);
  auto data = std::make_shared<ObjectData>();
  data->kind = kind;
  v.ptr_ = std::move(data);
  return v;
}

Value Value::function(std::string name, NativeFunction fn) {
  auto f = std::make_shared<FunctionData>();
  f->name = std::move(name);
  f->native = std::move(fn);
  return function(std::move(f));
}

Value Value::function(std::shared_ptr<FunctionData> fn) {
  Value v(Type::kFunction);
  v.ptr_ = std::move(fn);
  return v;
}

namespace {
Value from_json_at(const nlohmann::ordered_json& j, int depth) {
  check_depth(depth);
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::integer(double(j.get<int64_t>()));
    case nlohmann::json::value_t::number_unsigned: return Value::integer(double(j.get<uint64_t>()));
    case nlohmann::json::value_t::number_float: {
      // JSON.parse makes no difference between 2 and 2.0: an integral number is an integer.
      const double d = j.get<double>();
      return std::isfinite(d) && std::fmod(d, 1.0) == 0 ? Value::integer(d) : Value::floating(d);
    }
    case nlohmann::json::value_t::string: return Value::string(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_at(e, depth + 1));
      return Value::array(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Value o = Value::object();
      for (const auto& [k, e] : j.items()) o.obj().set(k, from_json_at(e, depth + 1));
      return o;
    }
    default: fail("cannot pass binary JSON data to a template");
  }
}
}  // namespace

Value Value::from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

bool Value::truthy() const {
  switch (type_) {
    case Type::kUndefined:
    case Type::kNone: return false;
    case Type::kBool: return b_;
    case Type::kInt:
    case Type::kFloat: return num_ != 0 && !std::isnan(num_);
    case Type::kString: return !str().empty();
    case Type::kArray: return !items().empty();
    case Type::kObject: return obj().kind == ObjectData::Kind::kNamespace || !obj().entries.empty();
    case Type::kFunction: return true;
  }
  return false;
}

int Value::depth() const {
  if (type_ == Type::kArray) return arr().depth;
  // A namespace counts as one level: the interpreter holds every namespace until the end of the
  // render, so releasing a value never recurses through one.
  if (type_ == Type::kObject) return obj().kind == ObjectData::Kind::kNamespace ? 1 : obj().depth;
  return 0;
}

bool Value::same_object(const Value& o) const {
  if (type_ != o.type_) return false;
  switch (type_) {
    case Type::kArray:
    case Type::kObject:
    case Type::kFunction: return ptr_ == o.ptr_;
    default: return false;
  }
}

const char* Value::type_name() const {
  switch (type_) {
    case Type::kUndefined: return "undefined";
    case Type::kNone: return "none";
    case Type::kBool: return "boolean";
    case Type::kInt: return "integer";
    case Type::kFloat: return "float";
    case Type::kString: return "string";
    case Type::kArray: return arr().tuple ? "tuple" : "list";
    case Type::kObject: return obj().kind == ObjectData::Kind::kNamespace ? "namespace" : "dict";
    case Type::kFunction: return "function";
  }
  return "?";
}

std::string Value::a_type() const {
  switch (type_) {
    case Type::kUndefined: return "an undefined value";
    case Type::kNone: return "none";
    case Type::kInt: return "an integer";
    default: return std::string("a ") + type_name();
  }
}

std::string display_string(const Value& v) { return display(v, 0); }

std::string raw_string(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined: return "";
    case Value::Type::kInt:
    case Value::Type::kFloat: return js_number(v.num());
    case Value::Type::kArray: return joined_items(v, 0);
    case Value::Type::kObject: return "[object Map]";
    default: return display(v, 0);
  }
}

bool loose_equals(const Value& a, const Value& b) { return loose(a, b, 0); }

bool strict_equals(const Value& a, const Value& b) {
  const JsKind ka = js_kind(a);
  if (ka != js_kind(b)) return false;
  switch (ka) {
    case JsKind::kUndefined: return true;
    case JsKind::kBool: return a.as_bool() == b.as_bool();
    case JsKind::kNumber: return a.num() == b.num();
    case JsKind::kString: return a.str() == b.str();
    case JsKind::kObject: return a.same_object(b);
  }
  return false;
}

void to_json(const Value& v, const JsonOptions& o, bool undefined_as_null, std::string& out, int depth) {
  check_depth(depth);
  if (out.size() > kMaxStringBytes) fail("tojson output longer than " + std::to_string(kMaxStringBytes) + " bytes");
  const char* item_sep = o.custom_separators ? o.item_separator.c_str() : o.indent ? "," : ", ";
  const char* key_sep = o.custom_separators ? o.key_separator.c_str() : ": ";
  switch (v.type()) {
    case Value::Type::kNone: out += "null"; return;
    case Value::Type::kUndefined: out += undefined_as_null ? "null" : "undefined"; return;
    case Value::Type::kBool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Type::kInt:
    case Value::Type::kFloat: out += std::isfinite(v.num()) ? js_number(v.num()) : "null"; return;
    case Value::Type::kString: json_quote(v.str(), o.ensure_ascii, out); return;
    case Value::Type::kFunction: fail("cannot convert a function to JSON");
    case Value::Type::kArray:
    case Value::Type::kObject: break;
  }
  const std::string indent(size_t(std::max(o.indent, 0)), ' ');
  std::string base_pad = "\n";
  for (int i = 0; i < depth && o.indent; ++i) base_pad += indent;
  const std::string child_pad = base_pad + indent;
  if (v.is_array()) {
    const auto& items = v.items();
    const bool pretty = o.indent && !items.empty();
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += item_sep;
      if (pretty) out += child_pad;
      to_json(items[i], o, undefined_as_null, out, depth + 1);
    }
    if (pretty) out += base_pad;
    out += ']';
    return;
  }
  std::vector<const std::pair<std::string, Value>*> entries;
  for (const auto& e : v.obj().entries) entries.push_back(&e);
  if (o.sort_keys)
    std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return key_less(a->first, b->first); });
  out += '{';
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i) out += item_sep;
    if (o.indent) out += child_pad;
    json_quote(entries[i]->first, o.ensure_ascii, out);
    out += key_sep;
    to_json(entries[i]->second, o, undefined_as_null, out, depth + 1);
  }
  if (o.indent && !entries.empty()) out += base_pad;
  out += '}';
}

}  // namespace strata::jinja

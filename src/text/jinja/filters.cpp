// The filters (`value | name(args)`).
#include <algorithm>
#include <cmath>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"
#include "text/jinja/js_text.h"
#include "text/jinja/limits.h"
#include "text/utf8.h"

namespace strata::jinja {
namespace {

[[noreturn]] void cannot(const std::string& name, const Value& v) {
  fail("filter '" + name + "' cannot be applied to " + v.a_type());
}

bool bool_arg(const CallArgs& a, size_t i, const char* kw, bool def, const std::string& filter) {
  const Value* v = a.arg(i, kw);
  if (!v) return def;
  if (!v->is_bool()) fail("filter '" + filter + "': " + kw + " must be a boolean");
  return v->as_bool();
}

std::vector<Value> code_point_values(const std::string& s) {
  std::vector<Value> out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = size_t(utf8_next(s, i).len);
    out.push_back(Value::string(s.substr(i, n)));
    i += n;
  }
  return out;
}

// What join puts in the output for one item: JavaScript's Array.join of the underlying values.
std::string join_piece(const Value& v) { return v.is_none() || v.is_undefined() ? "" : raw_string(v); }

Value tojson(const Value& v, const CallArgs& a) {
  JsonOptions o;
  // The reference reads keyword arguments only; a positional indent is taken as Jinja2 does.
  const Value* indent = a.arg(0, "indent");
  if (indent && !indent->is_none()) {
    if (!indent->is_int()) fail("tojson: indent must be an integer");
    if (indent->num() < 0 || indent->num() > 64) fail("tojson: indent must be between 0 and 64");
    o.indent = int(indent->num());
  }
  o.ensure_ascii = bool_arg(a, size_t(-1), "ensure_ascii", false, "tojson");
  o.sort_keys = bool_arg(a, size_t(-1), "sort_keys", false, "tojson");
  if (const Value* sep = a.kwarg("separators"); sep && !sep->is_none()) {
    if (!sep->is_array() || sep->items().size() != 2 || !sep->items()[0].is_string() || !sep->items()[1].is_string())
      fail("tojson: separators must be a pair of strings");
    o.custom_separators = true;
    o.item_separator = sep->items()[0].str();
    o.key_separator = sep->items()[1].str();
  }
  std::string out;
  to_json(v, o, /*undefined_as_null=*/true, out);
  return Value::string(std::move(out));
}

Value number_filter(const std::string& name, const Value& v, const CallArgs& a) {
  const bool to_int = name == "int";
  const Value* def = a.arg(0, "default");
  if (v.is_string()) {
    const double d = to_int ? js_parse_int(v.str()) : js_parse_float(v.str());
    if (std::isnan(d)) return def ? *def : to_int ? Value::integer(0) : Value::floating(0);
    return Value::number(d, !to_int);
  }
  if (v.is_number()) return to_int ? Value::integer(std::trunc(v.num()) + 0.0) : Value::floating(v.num());
  if (v.is_bool()) return Value::number(v.as_bool() ? 1 : 0, !to_int);
  cannot(name, v);
}

Value indent(const std::string& s, const CallArgs& a) {
  const Value* width = a.arg(0, "width");
  std::string pad = "    ";
  if (width) {
    if (width->is_string()) pad = width->str();
    else if (width->is_int()) pad = std::string(size_t(std::clamp(width->num(), 0.0, 1024.0)), ' ');
    else fail("filter 'indent': width must be an integer or a string");
  }
  const bool first = a.arg(1, "first") && a.arg(1, "first")->truthy();
  const bool blank = a.arg(2, "blank") && a.arg(2, "blank")->truthy();
  std::string out;
  size_t start = 0;
  for (bool first_line = true;; first_line = false) {
    const size_t nl = s.find('\n', start);
    const std::string_view line = std::string_view(s).substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (!((!first && first_line) || (!blank && line.empty()))) out += pad;
    out += line;
    if (out.size() > kMaxStringBytes) fail("filter 'indent': result too long");
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return Value::string(std::move(out));
}

Value sort(const Value& v, const CallArgs& a) {
  const bool reverse = bool_arg(a, 0, "reverse", false, "sort");
  const bool case_sensitive = bool_arg(a, 1, "case_sensitive", false, "sort");
  const Value* attr = a.arg(2, "attribute");
  std::string path;
  if (attr && !attr->is_none()) {
    if (attr->is_string()) path = attr->str();
    else if (attr->is_int()) path = js_number(attr->num());
    else fail("filter 'sort': attribute must be a string or an integer");
  }
  const bool by_attr = attr && !attr->is_none();
  std::vector<Value> keys, items = v.items();
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    order[i] = i;
    keys.push_back(by_attr ? attribute_path(items[i], path) : items[i]);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const int c = compare_values(keys[x], keys[y], case_sensitive);
    return reverse ? c > 0 : c < 0;
  });
  std::vector<Value> out;
  for (size_t i : order) out.push_back(items[i]);
  return Value::array(std::move(out));
}

// selectattr / rejectattr as the reference does them: items must be dicts or namespaces; a
// missing attribute fails the test.
Value select_attr(const std::string& name, const Value& v, const CallArgs& a) {
  const bool select = name == "selectattr";
  for (const Value& item : v.items())
    if (!item.is_object()) fail("filter '" + name + "' needs a list of dicts, found " + item.a_type());
  const Value* attr = a.arg(0, "attribute");
  if (!attr || !attr->is_string()) fail("filter '" + name + "' needs an attribute name");
  const Value* test = a.pos.size() > 1 ? &a.pos[1] : nullptr;
  if (test && !test->is_string()) fail("filter '" + name + "': the test must be named by a string");
  std::vector<Value> test_args(a.pos.begin() + long(std::min<size_t>(a.pos.size(), 2)), a.pos.end());
  std::vector<Value> out;
  for (const Value& item : v.items()) {
    const Value* field = item.obj().find(attr->str());
    bool ok = false;
    if (field) ok = test ? apply_test(test->str(), *field, test_args) : field->truthy();
    if (ok == select) out.push_back(item);
  }
  return Value::array(std::move(out));
}

Value select_items(const std::string& name, const Value& v, const CallArgs& a) {
  const bool select = name == "select";
  const Value* test = a.pos.empty() ? nullptr : &a.pos[0];
  if (test && !test->is_string()) fail("filter '" + name + "': the test must be named by a string");
  std::vector<Value> test_args(a.pos.begin() + long(std::min<size_t>(a.pos.size(), 1)), a.pos.end());
  std::vector<Value> out;
  for (const Value& item : v.items()) {
    const bool ok = test ? apply_test(test->str(), item, test_args) : item.truthy();
    if (ok == select) out.push_back(item);
  }
  return Value::array(std::move(out));
}

Value map(const Value& v, const CallArgs& a) {
  if (const Value* attr = a.kwarg("attribute")) {
    if (!attr->is_string()) fail("filter 'map': attribute must be a string");
    const Value* def = a.kwarg("default");
    std::vector<Value> out;
    for (const Value& item : v.items()) {
      if (!item.is_object()) fail("filter 'map' with an attribute needs a list of dicts");
      Value x = attribute_path(item, attr->str());
      out.push_back(x.is_undefined() && def ? *def : x);
    }
    return Value::array(std::move(out));
  }
  if (a.pos.empty() || !a.pos[0].is_string()) fail("filter 'map' needs attribute= or the name of a filter");
  // map('filter', args...) applies that filter to every item.
  CallArgs rest;
  rest.pos.assign(a.pos.begin() + 1, a.pos.end());
  rest.kw = a.kw;
  std::vector<Value> out;
  for (const Value& item : v.items()) out.push_back(apply_filter(a.pos[0].str(), item, rest));
  return Value::array(std::move(out));
}

Value unique(const Value& v) {
  std::vector<Value> out;
  for (const Value& item : v.items()) {
    bool seen = false;
    for (const Value& o : out)
      if (strict_equals(o, item) || (o.is_number() && item.is_number() && std::isnan(o.num()) && std::isnan(item.num()))) {
        seen = true;
        break;
      }
    if (!seen) out.push_back(item);
  }
  return Value::array(std::move(out));
}

Value extreme(const std::string& name, const Value& v, const CallArgs& a) {
  const bool case_sensitive = bool_arg(a, 0, "case_sensitive", false, name);
  const Value* attr = a.arg(1, "attribute");
  if (attr && !attr->is_string()) fail("filter '" + name + "': attribute must be a string");
  const Value* best = nullptr;
  Value best_key;
  for (const Value& item : v.items()) {
    Value key = attr ? attribute_path(item, attr->str()) : item;
    if (!best || (name == "min" ? compare_values(key, best_key, case_sensitive) < 0
                                : compare_values(key, best_key, case_sensitive) > 0)) {
      best = &item;
      best_key = key;
    }
  }
  return best ? *best : Value();
}

Value sum(const Value& v, const CallArgs& a) {
  const Value* attr = a.arg(0, "attribute");
  const Value* start = a.arg(1, "start");
  Value total = start ? *start : Value::integer(0);
  for (const Value& item : v.items()) {
    const Value x = attr ? attribute_path(item, attr->is_string() ? attr->str() : display_string(*attr)) : item;
    const bool tn = total.is_number() || total.is_bool(), xn = x.is_number() || x.is_bool();
    if (!tn || !xn) fail(std::string("filter 'sum' cannot add ") + x.a_type() + " to " + total.a_type());
    const double s = (total.is_bool() ? double(total.as_bool()) : total.num()) + (x.is_bool() ? double(x.as_bool()) : x.num());
    total = Value::number(s, total.is_float() || x.is_float());
  }
  return total;
}

Value batch(const Value& v, const CallArgs& a) {
  const Value* n = a.arg(0, "linecount");
  if (!n || !n->is_int() || n->num() < 1) fail("filter 'batch' needs a positive integer");
  const size_t size = size_t(std::min(n->num(), double(kMaxListItems)));
  const Value* fill = a.arg(1, "fill_with");
  std::vector<Value> out, cur;
  for (const Value& item : v.items()) {
    cur.push_back(item);
    if (cur.size() == size) out.push_back(Value::array(std::exchange(cur, {})));
  }
  if (!cur.empty()) {
    if (fill && !fill->is_none())
      while (cur.size() < size) cur.push_back(*fill);
    out.push_back(Value::array(std::move(cur)));
  }
  return Value::array(std::move(out));
}

Value round(const Value& v, const CallArgs& a) {
  if (!v.is_number()) cannot("round", v);
  const Value* p = a.arg(0, "precision");
  if (p && !p->is_int()) fail("filter 'round': precision must be an integer");
  const double precision = p ? std::clamp(p->num(), -300.0, 300.0) : 0;
  const Value* m = a.arg(1, "method");
  const std::string method = m && m->is_string() ? m->str() : "common";
  const double scale = std::pow(10.0, precision);
  if (method == "common") {
    // Python's round(): ties to even; an integer stays an integer.
    if (v.is_int() && precision >= 0) return v;
    const double r = precision == 0 ? std::nearbyint(v.num()) : std::nearbyint(v.num() * scale) / scale;
    return Value::number(r, v.is_float());
  }
  if (method == "ceil") return Value::floating(std::ceil(v.num() * scale) / scale);
  if (method == "floor") return Value::floating(std::floor(v.num() * scale) / scale);
  fail("filter 'round': method must be common, ceil or floor");
}

Value list_filter(const std::string& name, const Value& v, const CallArgs& a) {
  const auto& items = v.items();
  if (name == "list") return v;
  if (name == "first") return items.empty() ? Value() : items.front();
  if (name == "last") return items.empty() ? Value() : items.back();
  if (name == "length" || name == "count") return Value::integer(double(items.size()));
  if (name == "reverse") return Value::array(std::vector<Value>(items.rbegin(), items.rend()));
  if (name == "sort") return sort(v, a);
  if (name == "join") {
    const Value* sep = a.arg(0, "d");
    if (sep && !sep->is_string()) fail("filter 'join': the separator must be a string");
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i && sep) out += sep->str();
      out += join_piece(items[i]);
      if (out.size() > kMaxStringBytes) fail("filter 'join': result too long");
    }
    return Value::string(std::move(out));
  }
  if (name == "string") {
    std::string out;
    to_json(v, JsonOptions{}, /*undefined_as_null=*/false, out);
    return Value::string(std::move(out));
  }
  if (name == "unique") return unique(v);
  if (name == "selectattr" || name == "rejectattr") return select_attr(name, v, a);
  if (name == "select" || name == "reject") return select_items(name, v, a);
  if (name == "map") return map(v, a);
  if (name == "min" || name == "max") return extreme(name, v, a);
  if (name == "sum") return sum(v, a);
  if (name == "batch") return batch(v, a);
  fail("unknown filter '" + name + "' for a list");
}

Value string_filter(const std::string& name, const Value& v, const CallArgs& a) {
  const std::string& s = v.str();
  if (name == "length" || name == "count") return Value::integer(double(utf16_length(s)));
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" || name == "replace" ||
      name == "split") {
    return builtin_member(v, name).fn()->native(a);
  }
  if (name == "trim") {
    const Value* chars = a.arg(0, "chars");
    if (chars && !chars->is_none()) {
      if (!chars->is_string()) fail("filter 'trim': chars must be a string");
      return Value::string(strip_chars(s, chars->str(), true, true));
    }
    return Value::string(std::string(js_trim(s)));
  }
  if (name == "indent") return indent(s, a);
  if (name == "string") return v;
  if (name == "join") {
    const Value* sep = a.arg(0, "d");
    if (!sep) return v;
    if (!sep->is_string()) fail("filter 'join': the separator must be a string");
    return list_filter("join", Value::array(code_point_values(s)), a);
  }
  if (name == "int" || name == "float") return number_filter(name, v, a);
  if (name == "list") return Value::array(code_point_values(s));
  fail("unknown filter '" + name + "' for a string");
}

}  // namespace

Value apply_filter(const std::string& name, const Value& v, const CallArgs& a) {
  if (name == "safe") return v;
  if (name == "tojson") return tojson(v, a);
  if (name == "default" || name == "d") {
    const Value* def = a.arg(0, "default_value");
    const bool boolean = bool_arg(a, 1, "boolean", false, name);
    if (v.is_undefined() || (boolean && !v.truthy())) return def ? *def : Value::string("");
    return v;
  }
  if (v.is_array()) return list_filter(name, v, a);
  if (v.is_string()) {
    if (name == "reverse") {
      std::vector<Value> cps = code_point_values(v.str());
      std::string out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += it->str();
      return Value::string(std::move(out));
    }
    if (name == "first" || name == "last") {
      std::vector<Value> cps = code_point_values(v.str());
      if (cps.empty()) return Value();
      return name == "first" ? cps.front() : cps.back();
    }
    return string_filter(name, v, a);
  }
  if (v.is_number()) {
    if (name == "abs") return Value::number(std::fabs(v.num()), v.is_float());
    if (name == "int" || name == "float") return number_filter(name, v, a);
    if (name == "string") return Value::string(display_string(v));
    if (name == "round") return round(v, a);
    cannot(name, v);
  }
  if (v.is_mapping()) {
    if (name == "items") return builtin_member(v, "items").fn()->native(a);
    if (name == "length" || name == "count") return Value::integer(double(v.obj().entries.size()));
    if (name == "list") return builtin_member(v, "keys").fn()->native(a);
    if (name == "string") return Value::string(display_string(v));
    // Like the reference, any dict method can be used as a filter (d|dictsort, d|keys).
    Value m = builtin_member(v, name);
    if (m.is_function()) return m.fn()->native(a);
    cannot(name, v);
  }
  if (v.is_bool()) {
    if (name == "bool") return v;
    if (name == "int" || name == "float") return number_filter(name, v, a);
    if (name == "string") return Value::string(v.as_bool() ? "true" : "false");
    cannot(name, v);
  }
  cannot(name, v);
}

}  // namespace strata::jinja

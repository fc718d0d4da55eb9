// Methods of strings and dicts (x.strip(), d.items(), ...), and the value ordering the sorting
// filters share.
#include <algorithm>
#include <cmath>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"
#include "text/jinja/js_text.h"
#include "text/jinja/limits.h"
#include "text/utf8.h"

namespace strata::jinja {
namespace {

std::vector<std::string_view> code_points(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = size_t(utf8_next(s, i).len);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

const std::string& string_arg(const Value* v, const char* method, const char* what) {
  if (!v || !v->is_string()) fail(std::string(method) + "() needs a string as its " + what);
  return v->str();
}

// The count or maxsplit argument: an integer, none or absent (-1 for "no limit").
long long limit_arg(const Value* v, const char* method, const char* name) {
  if (!v || v->is_none()) return -1;
  if (!v->is_int()) fail(std::string(method) + "() needs an integer " + name);
  return v->num() < 0 ? -1 : v->num() > 1e15 ? (long long)1e15 : (long long)v->num();
}

std::vector<std::string> split_whitespace(std::string_view s, long long maxsplit, bool from_right) {
  // Runs of JavaScript whitespace separate; none are kept at the ends.
  std::vector<std::string> parts;
  if (!from_right) {
    s = js_trim_start(s);
    size_t i = 0;
    while (i < s.size()) {
      if (maxsplit >= 0 && (long long)parts.size() >= maxsplit) {
        parts.emplace_back(s.substr(i));
        return parts;
      }
      size_t j = i;
      while (j < s.size() && !js_space_at(s, j)) j += size_t(utf8_next(s, j).len);
      parts.emplace_back(s.substr(i, j - i));
      while (size_t n = js_space_at(s, j)) j += n;
      i = j;
    }
    return parts;
  }
  s = js_trim_end(s);
  size_t end = s.size();
  while (end > 0) {
    if (maxsplit >= 0 && (long long)parts.size() >= maxsplit) {
      parts.emplace_back(s.substr(0, end));
      break;
    }
    size_t start = end;
    while (start > 0 && !js_space_before(s, start)) {
      --start;
      while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    }
    parts.emplace_back(s.substr(start, end - start));
    while (size_t n = js_space_before(s, start)) start -= n;
    end = start;
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<std::string> split_on(std::string_view s, std::string_view sep, long long maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (!from_right) {
    size_t i = 0;
    for (;;) {
      const size_t j = maxsplit >= 0 && (long long)parts.size() >= maxsplit ? std::string_view::npos : s.find(sep, i);
      if (j == std::string_view::npos) {
        parts.emplace_back(s.substr(i));
        return parts;
      }
      parts.emplace_back(s.substr(i, j - i));
      i = j + sep.size();
    }
  }
  size_t end = s.size();
  for (;;) {
    const size_t j = maxsplit >= 0 && (long long)parts.size() >= maxsplit ? std::string_view::npos
                     : end < sep.size()                                     ? std::string_view::npos
                                                                            : s.rfind(sep, end - sep.size());
    if (j == std::string_view::npos) {
      parts.emplace_back(s.substr(0, end));
      break;
    }
    parts.emplace_back(s.substr(j + sep.size(), end - j - sep.size()));
    end = j;
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

Value string_list(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.push_back(Value::string(std::move(p)));
  return Value::array(std::move(items));
}

Value split(const std::string& s, const CallArgs& a, bool from_right) {
  const char* name = from_right ? "rsplit" : "split";
  const Value* sep = a.arg(0, "sep");
  const long long maxsplit = limit_arg(a.arg(1, "maxsplit"), name, "maxsplit");
  if (!sep || sep->is_none()) return string_list(split_whitespace(s, maxsplit, from_right));
  const std::string& sv = string_arg(sep, name, "separator");
  if (sv.empty()) fail(std::string(name) + "() with an empty separator");
  return string_list(split_on(s, sv, maxsplit, from_right));
}

// Python's str.replace, which the reference follows: an empty `old` inserts `new` between
// characters and at both ends.
Value replace(const std::string& s, const CallArgs& a) {
  const std::string& old_s = string_arg(a.arg(0, "old"), "replace", "first argument");
  const std::string& new_s = string_arg(a.arg(1, "new"), "replace", "second argument");
  long long count = limit_arg(a.arg(2, "count"), "replace", "count");
  if (count == 0) return Value::string(s);
  std::string out;
  if (old_s.empty()) {
    std::vector<std::string_view> cps = code_points(s);
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || (long long)i < count) out += new_s;
      if (i < cps.size()) out += cps[i];
      if (out.size() > kMaxStringBytes) fail("replace() result too long");
    }
    return Value::string(std::move(out));
  }
  size_t i = 0;
  for (long long done = 0; count < 0 || done < count; ++done) {
    const size_t j = s.find(old_s, i);
    if (j == std::string::npos) break;
    out.append(s, i, j - i);
    out += new_s;
    i = j + old_s.size();
    if (out.size() > kMaxStringBytes) fail("replace() result too long");
  }
  out.append(s, i);
  return Value::string(std::move(out));
}

bool affix_match(const std::string& s, const Value* pattern, bool prefix) {
  const char* name = prefix ? "startswith" : "endswith";
  auto one = [&](const std::string& p) { return prefix ? s.starts_with(p) : s.ends_with(p); };
  if (!pattern) fail(std::string(name) + "() needs an argument");
  if (pattern->is_string()) return one(pattern->str());
  if (pattern->is_array()) {
    for (const Value& p : pattern->items()) {
      if (!p.is_string()) fail(std::string(name) + "() needs strings in its tuple");
      if (one(p.str())) return true;
    }
    return false;
  }
  fail(std::string(name) + "() needs a string or a tuple of strings");
}

Value find(const std::string& s, const CallArgs& a, bool from_right) {
  const std::string& sub = string_arg(a.arg(0, "sub"), from_right ? "rfind" : "find", "argument");
  const size_t at = from_right ? s.rfind(sub) : s.find(sub);
  if (at == std::string::npos) return Value::integer(-1);
  return Value::integer(double(code_points(std::string_view(s).substr(0, at)).size()));
}

Value count(const std::string& s, const CallArgs& a) {
  const std::string& sub = string_arg(a.arg(0, "sub"), "count", "argument");
  if (sub.empty()) return Value::integer(double(code_points(s).size() + 1));
  double n = 0;
  for (size_t i = s.find(sub); i != std::string::npos; i = s.find(sub, i + sub.size())) ++n;
  return Value::integer(n);
}

Value join(const std::string& sep, const CallArgs& a) {
  const Value* items = a.arg(0, "iterable");
  if (!items || !items->is_array()) fail("join() needs a list of strings");
  std::string out;
  bool first = true;
  for (const Value& v : items->items()) {
    if (!v.is_string()) fail("join() needs a list of strings, found " + v.a_type());
    if (!first) out += sep;
    first = false;
    out += v.str();
    if (out.size() > kMaxStringBytes) fail("join() result too long");
  }
  return Value::string(std::move(out));
}

// str.format with {} / {0} / {name} fields (no format specs) and {{ }} escapes.
Value format(const std::string& s, const CallArgs& a) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if ((c == '{' || c == '}') && i + 1 < s.size() && s[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') fail("format(): single '}' in the format string");
    if (c != '{') {
      out += c;
      continue;
    }
    const size_t close = s.find('}', i);
    if (close == std::string::npos) fail("format(): '{' without '}' in the format string");
    const std::string field = s.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!.[") != std::string::npos) fail("format(): field '{" + field + "}' is not supported");
    const Value* v = nullptr;
    if (field.empty()) {
      v = auto_index < a.pos.size() ? &a.pos[auto_index] : nullptr;
      ++auto_index;
    } else if (std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      const size_t k = std::stoul(field.substr(0, 9));
      v = k < a.pos.size() ? &a.pos[k] : nullptr;
    } else {
      v = a.kwarg(field);
    }
    if (!v) fail("format(): no argument for field '{" + field + "}'");
    out += v->is_none() ? "None" : display_string(*v);
    i = close;
  }
  return Value::string(std::move(out));
}

Value strip(const std::string& s, const CallArgs& a, bool left, bool right) {
  const Value* chars = a.arg(0, "chars");
  // Without an argument (or with none) the reference trims JavaScript whitespace; with one,
  // Python's rule applies: exactly those characters are removed.
  if (!chars || chars->is_none()) {
    std::string_view v = s;
    if (left) v = js_trim_start(v);
    if (right) v = js_trim_end(v);
    return Value::string(std::string(v));
  }
  if (!chars->is_string()) fail("strip() needs a string of characters");
  return Value::string(strip_chars(s, chars->str(), left, right));
}

template <typename Pred>
Value all_chars(const std::string& s, Pred pred) {
  if (s.empty()) return Value::boolean(false);
  for (size_t i = 0; i < s.size();) {
    Utf8Char c = utf8_next(s, i);
    if (!pred(c.cp)) return Value::boolean(false);
    i += size_t(c.len);
  }
  return Value::boolean(true);
}

Value string_method(const std::string& s, const std::string& name, const CallArgs& a) {
  if (name == "upper") return Value::string(js_upper(s));
  if (name == "lower") return Value::string(js_lower(s));
  if (name == "title") return Value::string(js_title(s));
  if (name == "capitalize") {
    // The reference upper-cases the first character and leaves the rest as it is.
    if (s.empty()) return Value::string(s);
    const size_t n = size_t(utf8_next(s, 0).len);
    return Value::string(js_upper(s.substr(0, n)) + s.substr(n));
  }
  if (name == "strip") return strip(s, a, true, true);
  if (name == "lstrip") return strip(s, a, true, false);
  if (name == "rstrip") return strip(s, a, false, true);
  if (name == "startswith") return Value::boolean(affix_match(s, a.arg(0, "prefix"), true));
  if (name == "endswith") return Value::boolean(affix_match(s, a.arg(0, "suffix"), false));
  if (name == "split") return split(s, a, false);
  if (name == "rsplit") return split(s, a, true);
  if (name == "replace") return replace(s, a);
  if (name == "find") return find(s, a, false);
  if (name == "rfind") return find(s, a, true);
  if (name == "count") return count(s, a);
  if (name == "join") return join(s, a);
  if (name == "format") return format(s, a);
  if (name == "isdigit") return all_chars(s, [](char32_t c) { return c >= '0' && c <= '9'; });
  if (name == "isspace") return all_chars(s, [](char32_t c) { return js_is_space(c); });
  if (name == "isalpha") return all_chars(s, [](char32_t c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; });
  if (name == "isalnum")
    return all_chars(s, [](char32_t c) { return ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (c >= '0' && c <= '9'); });
  if (name == "islower") return Value::boolean(js_lower(s) == s && js_upper(s) != s);
  if (name == "isupper") return Value::boolean(js_upper(s) == s && js_lower(s) != s);
  fail("string has no method '" + name + "'");
}

bool is_string_method(const std::string& n) {
  static const char* const kNames[] = {"upper", "lower", "title", "capitalize", "strip", "lstrip", "rstrip",
                                       "startswith", "endswith", "split", "rsplit", "replace", "find", "rfind",
                                       "count", "join", "format", "isdigit", "isspace", "isalpha", "isalnum",
                                       "islower", "isupper"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

Value dict_items(const ObjectData& o) {
  std::vector<Value> items;
  for (const auto& [k, v] : o.entries) items.push_back(Value::array({Value::string(k), v}));
  return Value::array(std::move(items));
}

Value dict_method(const Value& d, const std::string& name, const CallArgs& a) {
  const ObjectData& o = d.obj();
  if (name == "get") {
    const Value* key = a.arg(0, "key");
    if (!key || !key->is_string()) fail("get() needs a string key");
    if (const Value* v = o.find(key->str())) return *v;
    const Value* def = a.arg(1, "default");
    return def ? *def : Value::none();
  }
  if (name == "items") return dict_items(o);
  if (name == "keys") {
    std::vector<Value> keys;
    for (const auto& e : o.entries) keys.push_back(Value::string(e.first));
    return Value::array(std::move(keys));
  }
  if (name == "values") {
    std::vector<Value> values;
    for (const auto& e : o.entries) values.push_back(e.second);
    return Value::array(std::move(values));
  }
  if (name == "dictsort") {
    const Value* cs = a.arg(0, "case_sensitive");
    const Value* by = a.arg(1, "by");
    const Value* rev = a.arg(2, "reverse");
    if (cs && !cs->is_bool()) fail("dictsort: case_sensitive must be a boolean");
    if (by && !(by->is_string() && (by->str() == "key" || by->str() == "value")))
      fail("dictsort: by must be 'key' or 'value'");
    if (rev && !rev->is_bool()) fail("dictsort: reverse must be a boolean");
    const bool case_sensitive = cs && cs->as_bool(), reverse = rev && rev->as_bool();
    const size_t idx = by && by->str() == "value" ? 1 : 0;
    Value items = dict_items(o);
    std::stable_sort(items.items().begin(), items.items().end(), [&](const Value& x, const Value& y) {
      const int c = compare_values(x.items()[idx], y.items()[idx], case_sensitive);
      return reverse ? c > 0 : c < 0;
    });
    return items;
  }
  fail("dict has no method '" + name + "'");
}

bool is_dict_method(const std::string& n) {
  return n == "get" || n == "items" || n == "keys" || n == "values" || n == "dictsort";
}

// JavaScript compares strings by UTF-16 code units: a character above U+FFFF sorts by its
// high surrogate.
int utf16_compare(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    Utf8Char x = utf8_next(a, i), y = utf8_next(b, j);
    const char32_t ux = x.cp > 0xFFFF ? 0xD800 + ((x.cp - 0x10000) >> 10) : x.cp;
    const char32_t uy = y.cp > 0xFFFF ? 0xD800 + ((y.cp - 0x10000) >> 10) : y.cp;
    if (ux != uy) return ux < uy ? -1 : 1;
    if (x.cp != y.cp) return x.cp < y.cp ? -1 : 1;
    i += size_t(x.len);
    j += size_t(y.len);
  }
  return i < a.size() ? 1 : j < b.size() ? -1 : 0;
}

}  // namespace

std::string strip_chars(const std::string& s, const std::string& chars, bool left, bool right) {
  std::vector<std::string_view> set = code_points(chars);
  std::vector<std::string_view> cps = code_points(s);
  auto in_set = [&](std::string_view c) { return std::find(set.begin(), set.end(), c) != set.end(); };
  size_t b = 0, e = cps.size();
  while (left && b < e && in_set(cps[b])) ++b;
  while (right && e > b && in_set(cps[e - 1])) --e;
  std::string out;
  for (size_t i = b; i < e; ++i) out += cps[i];
  return out;
}

Value builtin_member(const Value& object, const std::string& name) {
  if (object.is_string()) {
    if (name == "length") return Value::integer(double(utf16_length(object.str())));
    if (!is_string_method(name)) return Value();
    return Value::function(name, [object, name](const CallArgs& a) { return string_method(object.str(), name, a); });
  }
  if (object.is_array()) {
    if (name == "length") return Value::integer(double(object.items().size()));
    return Value();
  }
  if (object.is_mapping()) {
    if (!is_dict_method(name)) return Value();
    return Value::function(name, [object, name](const CallArgs& a) { return dict_method(object, name, a); });
  }
  return Value();
}

int compare_values(const Value& a, const Value& b, bool case_sensitive) {
  if (a.is_none() || b.is_none()) {
    if (a.is_none() && b.is_none()) return 0;
    fail(std::string("cannot compare ") + a.type_name() + " with " + b.type_name());
  }
  if (a.is_undefined() || b.is_undefined()) {
    if (a.is_undefined() && b.is_undefined()) return 0;
    fail(std::string("cannot compare ") + a.type_name() + " with " + b.type_name());
  }
  auto numeric = [](const Value& v) { return v.is_number() || v.is_bool(); };
  if (numeric(a) && numeric(b)) {
    const double x = a.is_bool() ? double(a.as_bool()) : a.num(), y = b.is_bool() ? double(b.as_bool()) : b.num();
    // NaN sorts first, so that the order stays total.
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) == std::isnan(y) ? 0 : std::isnan(x) ? -1 : 1;
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    if (case_sensitive) return utf16_compare(a.str(), b.str());
    return utf16_compare(js_lower(a.str()), js_lower(b.str()));
  }
  fail(std::string("cannot compare ") + a.type_name() + " with " + b.type_name());
}

Value attribute_path(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  for (;;) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (v.is_object()) {
      const Value* f = v.obj().find(part);
      if (!f) return Value();
      Value next = *f;
      v = std::move(next);
    } else if (v.is_array()) {
      // parseInt: leading digits make the index.
      const double idx = js_parse_int(part);
      if (std::isnan(idx) || idx < 0 || idx >= double(v.items().size())) return Value();
      Value next = v.items()[size_t(idx)];
      v = std::move(next);
    } else {
      return Value();
    }
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

}  // namespace strata::jinja

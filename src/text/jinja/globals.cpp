// Names every template sees: the constants and the global functions transformers provides.
#include <cmath>
#include <ctime>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/limits.h"
#include "text/utf8.h"

namespace strata::jinja {
namespace {

double number_arg(const Value& v) {
  if (!v.is_number()) fail(std::string("range() needs numbers, got ") + v.a_type());
  return v.num();
}

Value range(const CallArgs& a) {
  if (!a.kw.empty()) fail("range() takes no keyword arguments");
  if (a.pos.empty() || a.pos.size() > 3) fail("range() takes one to three arguments");
  double start = 0, stop = 0, step = 1;
  if (a.pos.size() == 1) {
    stop = number_arg(a.pos[0]);
  } else {
    start = number_arg(a.pos[0]);
    stop = number_arg(a.pos[1]);
    if (a.pos.size() == 3) step = number_arg(a.pos[2]);
  }
  if (step == 0 || std::isnan(step)) fail("range() step must not be zero");
  const double n = std::ceil((stop - start) / step);
  if (n > double(kMaxListItems)) fail("range() of more than " + std::to_string(kMaxListItems) + " items");
  std::vector<Value> out;
  for (double i = start; step > 0 ? i < stop : i > stop; i += step)
    out.push_back(Value::number(i, std::fmod(i, 1.0) != 0));
  return Value::array(std::move(out));
}

// transformers' strftime_now as @huggingface/jinja implements it (%Y %m %d %b %B %H %M %%),
// plus %y %a %A %I %p %S %j as Python's strftime writes them; other codes stay as written.
Value strftime_now(const CallArgs& a) {
  if (a.pos.empty() || !a.pos[0].is_string()) fail("strftime_now() needs a format string");
  static const char* const kMonths[] = {"January", "February", "March", "April", "May", "June", "July",
                                        "August", "September", "October", "November", "December"};
  static const char* const kDays[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
  const std::time_t now = std::time(nullptr);
  std::tm t{};
  localtime_r(&now, &t);
  auto pad2 = [](int v) { return std::to_string(v).insert(0, v < 10 ? 1 : 0, '0'); };
  const std::string& f = a.pos[0].str();
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%' || i + 1 == f.size()) {
      out += f[i];
      continue;
    }
    const char c = f[++i];
    switch (c) {
      case 'Y': out += std::to_string(t.tm_year + 1900); break;
      case 'y': out += pad2((t.tm_year + 1900) % 100); break;
      case 'm': out += pad2(t.tm_mon + 1); break;
      case 'd': out += pad2(t.tm_mday); break;
      case 'b': out += std::string(kMonths[t.tm_mon]).substr(0, 3); break;
      case 'B': out += kMonths[t.tm_mon]; break;
      case 'a': out += std::string(kDays[t.tm_wday]).substr(0, 3); break;
      case 'A': out += kDays[t.tm_wday]; break;
      case 'H': out += pad2(t.tm_hour); break;
      case 'I': out += pad2(t.tm_hour % 12 == 0 ? 12 : t.tm_hour % 12); break;
      case 'p': out += t.tm_hour < 12 ? "AM" : "PM"; break;
      case 'M': out += pad2(t.tm_min); break;
      case 'S': out += pad2(t.tm_sec); break;
      case 'j': {
        const std::string d = std::to_string(t.tm_yday + 1);
        out += std::string(3 - d.size(), '0') + d;
        break;
      }
      case '%': out += '%'; break;
      default: out += '%'; out += c;
    }
  }
  return Value::string(std::move(out));
}

void add_entry(ObjectData& ns, const Value& pair) {
  std::vector<Value> kv;
  if (pair.is_array()) {
    kv = pair.items();
  } else if (pair.is_string()) {
    const std::string& s = pair.str();  // a two-character string is a (key, value) pair
    for (size_t i = 0; i < s.size();) {
      const size_t n = size_t(utf8_next(s, i).len);
      kv.push_back(Value::string(s.substr(i, n)));
      i += n;
    }
  }
  if (kv.size() != 2) fail("namespace() needs a dict or a list of (key, value) pairs");
  if (!kv[0].is_string()) fail("namespace() keys must be strings");
  ns.set(kv[0].str(), kv[1]);
}

}  // namespace

void install_globals(Scope& g, Interpreter& interp) {
  g.set("true", Value::boolean(true));
  g.set("false", Value::boolean(false));
  g.set("none", Value::none());
  // Jinja2 also accepts the Python spellings.
  g.set("True", Value::boolean(true));
  g.set("False", Value::boolean(false));
  g.set("None", Value::none());
  g.set("range", Value::function("range", range));
  g.set("strftime_now", Value::function("strftime_now", strftime_now));
  g.set("raise_exception", Value::function("raise_exception", [](const CallArgs& a) -> Value {
          if (a.pos.empty()) fail("the template raised an exception");
          fail("the template raised an exception: " + (a.pos[0].is_string() ? a.pos[0].str() : display_string(a.pos[0])));
        }));
  g.set("namespace", Value::function("namespace", [&interp](const CallArgs& a) {
          if (a.pos.size() > 1) fail("namespace() takes at most one positional argument");
          Value ns = interp.make_namespace();
          if (a.pos.size() == 1) {
            const Value& src = a.pos[0];
            if (src.is_mapping()) {
              for (const auto& [k, v] : src.obj().entries) ns.obj().set(k, v);
            } else if (src.is_array()) {
              for (const Value& pair : src.items()) add_entry(ns.obj(), pair);
            } else {
              fail(std::string("namespace() cannot take ") + src.a_type());
            }
          }
          for (const auto& [k, v] : a.kw) ns.obj().set(k, v);
          return ns;
        }));
}

}  // namespace strata::jinja

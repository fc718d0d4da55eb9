// The `is` tests.
#include <cmath>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"
#include "text/jinja/js_text.h"

namespace strata::jinja {
namespace {

const Value& the_arg(const std::string& name, const std::vector<Value>& args) {
  if (args.size() != 1) fail("test '" + name + "' takes one argument");
  return args[0];
}

bool number_like(const Value& v) { return v.is_number() || v.is_bool(); }
double number_of(const Value& v) { return v.is_bool() ? double(v.as_bool()) : v.num(); }

}  // namespace

bool apply_test(const std::string& name, const Value& v, const std::vector<Value>& args) {
  const bool no_args = args.empty();
  if (no_args) {
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "boolean") return v.is_bool();
    if (name == "true") return v.is_bool() && v.as_bool();
    if (name == "false") return v.is_bool() && !v.as_bool();
    if (name == "string") return v.is_string();
    if (name == "number") return v.is_number();
    if (name == "integer") return v.is_int();
    if (name == "float") return v.is_float();
    if (name == "mapping") return v.is_mapping();
    if (name == "iterable") return v.is_array() || v.is_string();
    if (name == "sequence") return v.is_array() || v.is_mapping() || v.is_string();
    if (name == "callable") return v.is_function();
    if (name == "lower") return v.is_string() && js_lower(v.str()) == v.str();
    if (name == "upper") return v.is_string() && js_upper(v.str()) == v.str();
    if (name == "odd" || name == "even") {
      if (!v.is_int()) fail("test '" + name + "' needs an integer, got " + v.type_name());
      const double r = std::fmod(v.num(), 2.0);
      return name == "odd" ? r != 0 : r == 0;
    }
  }
  if (name == "equalto" || name == "eq" || name == "==") return strict_equals(v, the_arg(name, args));
  if (name == "ne" || name == "!=") return !strict_equals(v, the_arg(name, args));
  if (name == "sameas") {
    const Value& o = the_arg(name, args);
    return v.same_object(o) || (!v.is_array() && !v.is_object() && !v.is_function() && strict_equals(v, o));
  }
  if (name == "lt" || name == "<" || name == "le" || name == "<=" || name == "gt" || name == ">" || name == "ge" ||
      name == ">=") {
    const Value& o = the_arg(name, args);
    const int c = compare_values(v, o, true);
    if (name == "lt" || name == "<") return c < 0;
    if (name == "le" || name == "<=") return c <= 0;
    if (name == "gt" || name == ">") return c > 0;
    return c >= 0;
  }
  if (name == "divisibleby") {
    const Value& o = the_arg(name, args);
    if (!number_like(v) || !number_like(o)) fail("test 'divisibleby' needs numbers");
    if (number_of(o) == 0) fail("test 'divisibleby' with zero");
    return std::fmod(number_of(v), number_of(o)) == 0;
  }
  if (name == "in") {
    const Value& o = the_arg(name, args);
    if (o.is_array()) {
      for (const Value& e : o.items())
        if (strict_equals(e, v)) return true;
      return false;
    }
    if (o.is_string() && v.is_string()) return o.str().find(v.str()) != std::string::npos;
    if (o.is_mapping() && v.is_string()) return o.obj().find(v.str()) != nullptr;
    fail(std::string("test 'in' cannot look for ") + v.a_type() + " in " + o.a_type());
  }
  static const char* const kKnown[] = {"defined", "undefined", "none", "boolean", "true", "false", "string",
                                       "number", "integer", "float", "mapping", "iterable", "sequence",
                                       "callable", "lower", "upper", "odd", "even"};
  for (const char* k : kKnown)
    if (name == k) fail("test '" + name + "' takes no arguments");
  fail("unknown test '" + name + "'");
}

}  // namespace strata::jinja

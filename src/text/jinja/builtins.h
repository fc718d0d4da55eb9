// The interpreter's built-in filters, tests, methods and global functions. Each follows
// @huggingface/jinja where the reference has it; those it lacks follow Jinja2/Python. All throw
// TemplateError (via fail()) for what they do not support, naming it.
#pragma once
#include <string>
#include <vector>

#include "text/jinja/value.h"

namespace strata::jinja {

class Interpreter;
struct Scope;

// filters.cpp: `operand | name(args)`; `operand | name` is the same with no arguments.
Value apply_filter(const std::string& name, const Value& operand, const CallArgs& args);

// tests.cpp: `operand is name(args)`.
bool apply_test(const std::string& name, const Value& operand, const std::vector<Value>& args);

// methods.cpp: attribute `name` of a string, list or dict that is a builtin (a bound method, or
// the reference's `.length`); undefined when there is none.
Value builtin_member(const Value& object, const std::string& name);

// The reference's ordering for sort, dictsort, min and max: numbers (and booleans) by value,
// strings case-insensitively unless case_sensitive, none with none, undefined with undefined;
// anything else is an error. Returns <0, 0 or >0.
int compare_values(const Value& a, const Value& b, bool case_sensitive);

// Dotted attribute path into dicts, namespaces and lists ("function.name", "items.0").
Value attribute_path(const Value& item, const std::string& path);

// globals.cpp: true/false/none (and True/False/None), range, namespace, raise_exception,
// strftime_now.
void install_globals(Scope& global, Interpreter& interp);

// Python's str.strip family with an explicit set of characters (code points).
std::string strip_chars(const std::string& s, const std::string& chars, bool left, bool right);

}  // namespace strata::jinja

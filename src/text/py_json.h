// JSON text as Python's json.dumps(value, ensure_ascii=False) writes it: ", " and ": " separators,
// non-ASCII kept as UTF-8, floats in repr() form. DeepSeek's encoder prints tool schemas and
// argument values this way, so prompts are byte-identical only with this exact spelling.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace strata {

// Key order is the caller's (ordered_json); Python dicts keep insertion order too.
void append_py_json(std::string& out, const nlohmann::ordered_json& value);
std::string py_json(const nlohmann::ordered_json& value);

// A JSON string literal: escapes ", \, and control characters only (ensure_ascii=False).
void append_py_json_string(std::string& out, std::string_view s);

// Python's repr() of a float: shortest round-trip digits, fixed notation for exponents in
// [-4, 16), otherwise d.ddde+XX; always a '.0' on integral fixed values.
std::string py_float_repr(double x);

}  // namespace strata

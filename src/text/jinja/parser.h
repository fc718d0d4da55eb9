// Parses tokens into a syntax tree with @huggingface/jinja's grammar and operator precedence
// (loosest first: `a if b else c`, or, and, not, comparisons and in, + - ~, * / // %, **, is,
// |filter, unary sign, calls/attributes/subscripts), plus what the reference lacks and Jinja2
// has: elif chains kept flat, test arguments (`is divisibleby(3)`, `is eq 3`) and {% raw %}.
// Statements it does not know ({% include %}, {% extends %}, ...) are errors naming them.
#pragma once
#include <string_view>

#include "text/jinja/ast.h"

namespace strata::jinja {

// Throws TemplateError with the position of the offending token.
NodePtr parse_template(std::string_view source);

}  // namespace strata::jinja

// Tokens of a template, following @huggingface/jinja's lexer (after preprocess()): text runs
// between tags, and inside {% %} / {{ }} the names, literals and operators. Whitespace control
// ({%- -%} {{- -}} {#- -#}) is applied here. {% raw %}...{% endraw %} comes out as one text
// token between the two tags.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "text/jinja/error.h"

namespace strata::jinja {

enum class Tok {
  kText,
  kNumber,        // digits, optionally "-" and a fraction: "12", "-3", "1.5"
  kString,        // the literal's value, escapes resolved
  kName,          // identifiers and keywords alike
  kEquals,        // =
  kOpenParen, kCloseParen,
  kOpenStatement, kCloseStatement,    // {% %}
  kOpenExpression, kCloseExpression,  // {{ }}
  kOpenBracket, kCloseBracket,
  kOpenBrace, kCloseBrace,
  kComma, kDot, kColon, kPipe,
  kAdditive,        // + - ~
  kMultiplicative,  // * / // %
  kPower,           // **
  kComparison,      // < > <= >= == !=
  kUnary,           // a lone + or - before an operand
  kComment,
};

struct Token {
  Tok type;
  std::string value;
  SourcePos pos;
};

// Throws TemplateError (with the position) for text that is not a template.
std::vector<Token> tokenize(std::string_view source);

const char* token_name(Tok t);

}  // namespace strata::jinja

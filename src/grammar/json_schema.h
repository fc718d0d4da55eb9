// JSON Schema to a byte grammar of the JSON texts it accepts, for structured output.
//
// Supported: type (one or a list), enum, const, anyOf (and oneOf, compiled as anyOf: the
// grammar cannot exclude a text that several branches accept), $ref to a JSON pointer within
// the document (recursion included), properties / required / additionalProperties, items /
// minItems / maxItems, minLength / maxLength, and annotations (title, description, default,
// examples, $schema, $id, $comment, $defs, definitions). Any other keyword is an error naming
// it and where it is: a constraint that cannot be enforced is refused, never ignored.
//
// The text's shape is fixed where JSON leaves a choice, as llama.cpp's and OpenAI's strict mode
// do: properties in the schema's order, each optional one present or absent, no property the
// schema does not name unless additionalProperties allows it (a bare {"type": "object"} allows
// any); whitespace after '{', '[', ',' and ':' and before '}' and ']' is nothing, one space, or
// a newline and up to 20 spaces or tabs; integers have at most 16 digits, fractions and
// exponents at most 16 and 3. Strings are valid UTF-8 with JSON's escapes.
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "grammar/grammar.h"

namespace strata::grammar {

class SchemaCompiler;

// A schema's rules inside a grammar being built, for grammars that wrap JSON in other markup
// (tool calls). Each value() schema's $refs resolve within that schema, which must outlive the
// builder's finish().
class JsonSchemaRules {
 public:
  explicit JsonSchemaRules(GrammarBuilder& b);
  ~JsonSchemaRules();
  Elem value(const nlohmann::ordered_json& schema, const std::string& name);
  Elem any_object() const;

 private:
  std::unique_ptr<SchemaCompiler> impl_;
};

// Throws strata::Error ("...at #/properties/x: ...") for a schema it cannot compile.
// The schema as ordered JSON: its properties' order is the order the output writes them in.
Grammar grammar_from_json_schema(const nlohmann::ordered_json& schema);

// Any JSON object: OpenAI's response_format {"type": "json_object"}.
Grammar json_object_grammar();

}  // namespace strata::grammar

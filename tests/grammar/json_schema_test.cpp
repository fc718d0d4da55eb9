#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "grammar/matcher.h"

namespace strata::grammar {
namespace {

using json = nlohmann::ordered_json;

// Whether the whole text is a sentence of the grammar.
bool accepts(const Grammar& g, const std::string& text) {
  CompiledGrammar cg(g, std::make_shared<VocabIndex>(std::vector<std::optional<std::string>>{}));
  StackSet s = cg.initial();
  if (!cg.advance(s, text)) return false;
  return !s.empty() && s.front().empty();
}

// Whether the text is a prefix of some sentence.
bool prefix(const Grammar& g, const std::string& text) {
  CompiledGrammar cg(g, std::make_shared<VocabIndex>(std::vector<std::optional<std::string>>{}));
  StackSet s = cg.initial();
  return cg.advance(s, text);
}

TEST(JsonSchemaGrammar, ObjectWithRequiredAndOptionalPropertiesInOrder) {
  const Grammar g = grammar_from_json_schema(json::parse(R"({
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "ok": {"type": "boolean"}},
    "required": ["name"]})"));
  EXPECT_TRUE(accepts(g, R"({"name": "Ada"})"));
  EXPECT_TRUE(accepts(g, R"({"name":"Ada","age":36,"ok":true})"));
  EXPECT_TRUE(accepts(g, "{\n  \"name\": \"Ada\",\n  \"ok\": false\n}"));
  EXPECT_TRUE(accepts(g, R"({"name": "\u00e9\n\"x\""})"));
  EXPECT_TRUE(accepts(g, "{\"name\": \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}"));
  EXPECT_FALSE(accepts(g, R"({"age": 3})"));                   // name is required
  EXPECT_FALSE(accepts(g, R"({"age": 3, "name": "x"})"));      // schema order
  EXPECT_FALSE(accepts(g, R"({"name": "x", "other": 1})"));    // no additional properties
  EXPECT_FALSE(accepts(g, R"({"name": "x", "age": 3.5})"));    // integer
  EXPECT_FALSE(accepts(g, R"({"name": "x", "age": 01})"));     // JSON numbers have no leading zero
  EXPECT_FALSE(accepts(g, R"({"name": "x",})"));
  EXPECT_FALSE(prefix(g, "{\"name\": \"\xc3\x28"));             // invalid UTF-8
  EXPECT_FALSE(prefix(g, "{\"name\": \"\xed\xa0\x80"));         // a surrogate
  EXPECT_FALSE(prefix(g, "{\"name\": \"a\tb"));                 // raw control character
  EXPECT_FALSE(prefix(g, R"({"name": "\q)"));
  EXPECT_TRUE(prefix(g, R"({"name": "Ad)"));
  EXPECT_FALSE(accepts(g, R"({"name": "Ad)"));
}

TEST(JsonSchemaGrammar, AllOptionalObjectMayBeEmpty) {
  const Grammar g = grammar_from_json_schema(json::parse(
      R"({"type":"object","properties":{"a":{"type":"null"},"b":{"type":"number"}}})"));
  EXPECT_TRUE(accepts(g, "{}"));
  EXPECT_TRUE(accepts(g, "{ }"));
  EXPECT_TRUE(accepts(g, R"({"b": -0.5e+10})"));
  EXPECT_TRUE(accepts(g, R"({"a": null, "b": 12})"));
  EXPECT_FALSE(accepts(g, R"({"b": 1.})"));
  EXPECT_FALSE(accepts(g, R"({"b": +1})"));
}

TEST(JsonSchemaGrammar, EnumsConstsArraysAndAnyOf) {
  const Grammar g = grammar_from_json_schema(json::parse(R"({
    "type": "object",
    "properties": {
      "color": {"enum": ["red", "green", 3, null]},
      "tag": {"const": {"k": [1, "x"]}},
      "list": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]},
               "minItems": 1, "maxItems": 3}},
    "required": ["color", "tag", "list"]})"));
  EXPECT_TRUE(accepts(g, R"({"color": "red", "tag": {"k":[1,"x"]}, "list": [1]})"));
  EXPECT_TRUE(accepts(g, R"({"color": 3, "tag": {"k":[1,"x"]}, "list": [1, "ab", -7]})"));
  EXPECT_TRUE(accepts(g, R"({"color": null, "tag": {"k":[1,"x"]}, "list": [""]})"));
  EXPECT_FALSE(accepts(g, R"({"color": "blue", "tag": {"k":[1,"x"]}, "list": [1]})"));
  EXPECT_FALSE(accepts(g, R"({"color": "red", "tag": {"k":[1,"y"]}, "list": [1]})"));
  EXPECT_FALSE(accepts(g, R"({"color": "red", "tag": {"k":[1,"x"]}, "list": []})"));
  EXPECT_FALSE(accepts(g, R"({"color": "red", "tag": {"k":[1,"x"]}, "list": [1,2,3,4]})"));
  EXPECT_FALSE(accepts(g, R"({"color": "red", "tag": {"k":[1,"x"]}, "list": ["abc"]})"));
}

TEST(JsonSchemaGrammar, RecursiveRefsAndTypeLists) {
  const Grammar g = grammar_from_json_schema(json::parse(R"({
    "$defs": {"node": {"type": "object",
                       "properties": {"v": {"type": ["integer", "null"]},
                                      "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                       "required": ["v"]}},
    "$ref": "#/$defs/node"})"));
  EXPECT_TRUE(accepts(g, R"({"v": 1})"));
  EXPECT_TRUE(accepts(g, R"({"v": null, "kids": [{"v": 2, "kids": [{"v": 3}]}, {"v": 4}]})"));
  EXPECT_FALSE(accepts(g, R"({"v": 1, "kids": [{"kids": []}]})"));
  EXPECT_FALSE(accepts(g, R"({"v": "1"})"));
}

TEST(JsonSchemaGrammar, BareObjectAndJsonObjectModeAcceptAnyObject) {
  for (const Grammar& g : {json_object_grammar(), grammar_from_json_schema(json::parse(R"({"type":"object"})"))}) {
    EXPECT_TRUE(accepts(g, R"({})"));
    EXPECT_TRUE(accepts(g, R"({"a": [1, {"b": null}, "x", true], "c": {"d": -1.5E3}})"));
    EXPECT_FALSE(accepts(g, R"([1])"));
    EXPECT_FALSE(accepts(g, R"("x")"));
    EXPECT_FALSE(accepts(g, R"({"a": 1} )"));
    EXPECT_FALSE(accepts(g, R"({a: 1})"));
  }
}

TEST(JsonSchemaGrammar, StringLengthBounds) {
  const Grammar g = grammar_from_json_schema(json::parse(R"({"type":"string","minLength":2,"maxLength":3})"));
  EXPECT_FALSE(accepts(g, R"("a")"));
  EXPECT_TRUE(accepts(g, R"("ab")"));
  EXPECT_TRUE(accepts(g, "\"a\xc3\xa9\\n\""));  // characters, not bytes
  EXPECT_FALSE(accepts(g, R"("abcd")"));
}

TEST(JsonSchemaGrammar, UnsupportedOrMalformedSchemasAreRefusedByName) {
  auto err = [](const char* s) {
    try {
      grammar_from_json_schema(json::parse(s));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(err(R"({"type":"string","pattern":"^a"})").find("'pattern'"), std::string::npos);
  EXPECT_NE(err(R"({"type":"object","properties":{"x":{"type":"integer","minimum":0}}})").find("#/properties/x"),
            std::string::npos);
  EXPECT_NE(err(R"({"allOf":[{}]})").find("'allOf'"), std::string::npos);
  EXPECT_NE(err(R"({"type":"strnig"})").find("unknown type 'strnig'"), std::string::npos);
  EXPECT_NE(err(R"({"$ref":"#/$defs/missing"})").find("points at nothing"), std::string::npos);
  EXPECT_NE(err(R"({"$ref":"http://x/y.json"})").find("within the document"), std::string::npos);
  EXPECT_NE(err(R"({"type":"object","required":["a"]})").find("'a' is not in"), std::string::npos);
  EXPECT_NE(err(R"({"type":"array","minItems":3,"maxItems":2})").find("greater"), std::string::npos);
  EXPECT_NE(err(R"(false)").find("accepts nothing"), std::string::npos);
  EXPECT_NE(err(R"({"type":"string","maxLength":1000000})").find("grammar rules"), std::string::npos);
  EXPECT_NE(err(R"({"type":"object","anyOf":[{}]})").find("beside"), std::string::npos);
}

TEST(GrammarBuilder, RejectsLeftRecursionAndRepeatedNullableItems) {
  GrammarBuilder b;
  const uint32_t r = b.declare("r");
  b.define(r, {{b.ref(r), b.byte('a')}, b.literal("b")});
  EXPECT_THROW(b.finish(r), Error);
  GrammarBuilder c;
  const uint32_t e = c.rule("maybe", {c.literal("x"), {}});
  const Elem star = c.repeat({c.ref(e)}, 0, -1, "star");
  EXPECT_THROW(c.finish(c.rule("root", {{star}})), Error);
}

}  // namespace
}  // namespace strata::grammar

#include "text/py_json.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

using Json = nlohmann::ordered_json;

// Expected texts are what Python's json.dumps(x, ensure_ascii=False) prints.
TEST(PyJson, FloatsAsPythonRepr) {
  EXPECT_EQ(py_float_repr(1.0), "1.0");
  EXPECT_EQ(py_float_repr(-0.0), "-0.0");
  EXPECT_EQ(py_float_repr(0.1), "0.1");
  EXPECT_EQ(py_float_repr(1.5), "1.5");
  EXPECT_EQ(py_float_repr(123456789.125), "123456789.125");
  EXPECT_EQ(py_float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(py_float_repr(1e16), "1e+16");
  EXPECT_EQ(py_float_repr(1.5e22), "1.5e+22");
  EXPECT_EQ(py_float_repr(0.0001), "0.0001");
  EXPECT_EQ(py_float_repr(0.00001), "1e-05");
  EXPECT_EQ(py_float_repr(2.5e-10), "2.5e-10");
  EXPECT_EQ(py_float_repr(1e300), "1e+300");
  EXPECT_EQ(py_float_repr(1.0 / 3), "0.3333333333333333");
}

TEST(PyJson, SeparatorsEscapesAndOrder) {
  const Json v = Json::parse(R"({"b": [1, -2, 18446744073709551615, 2.0, true, false, null, {}, []],
                                 "a": "q\"\\\n\r\t\b\f\u0001\u007f é 中 😀"})");
  EXPECT_EQ(py_json(v),
            "{\"b\": [1, -2, 18446744073709551615, 2.0, true, false, null, {}, []], "
            "\"a\": \"q\\\"\\\\\\n\\r\\t\\b\\f\\u0001\x7f é 中 😀\"}");
}

}  // namespace
}  // namespace strata

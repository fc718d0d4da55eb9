// The syntax tree of a template. One node type with a kind; the fields each kind uses are listed
// beside it.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/error.h"

namespace strata::jinja {

struct Node;
using NodePtr = std::unique_ptr<Node>;
using NodeList = std::vector<NodePtr>;

enum class BinOp { kAnd, kOr, kEq, kNe, kLt, kGt, kLe, kGe, kIn, kNotIn, kAdd, kSub, kConcat, kMul, kDiv, kFloorDiv, kMod, kPow };

enum class NodeKind {
  // Statements
  kTemplate,     // body
  kText,         // name: the text
  kOutput,       // a: the expression of {{ }}
  kIf,           // branches (test, body) for if and each elif; body: the else block
  kFor,          // a: target (kName or kTuple), b: iterable, c: filter test or null; body; orelse
  kSet,          // a: target (name, tuple or attribute); b: value, or null with body (block set)
  kMacro,        // name; params; body
  kCallBlock,    // a: the call (kCall); params: the caller's parameters; body
  kFilterBlock,  // a: the filter (kFilter with no operand); body
  kBreak,
  kContinue,
  // Expressions
  kName,         // name
  kInteger,      // number
  kFloat,        // number
  kString,       // name: the value
  kList,         // items
  kTuple,        // items
  kDict,         // items: keys, values: values
  kBinary,       // op; a, b
  kNot,          // a
  kNegate,       // name: "-" or "+"; a
  kAttribute,    // a: object; name: the attribute (x.name)
  kIndex,        // a: object; b: index (x[0] and x.0)
  kSlice,        // a: object; items: start, stop, step (null when left out)
  kCall,         // a: callee; items: arguments (kKeyword, kSpread, kKeywordSpread or expressions)
  kFilter,       // a: operand; name; items: arguments; flag: written with parentheses
  kTest,         // a: operand; name; items: arguments; flag: negated (is not)
  kTernary,      // a: value if true; b: condition; c: value if false
  kSelect,       // a: value; b: condition (a if b, without else: undefined when false)
  kKeyword,      // name; a: value (name=value in calls, defaults in parameter lists)
  kSpread,       // a (*a)
  kKeywordSpread,  // a (**a)
};

struct Node {
  NodeKind kind;
  SourcePos pos;
  std::string name;
  double number = 0;
  BinOp op = BinOp::kAnd;
  bool flag = false;
  NodePtr a, b, c;
  NodeList items, values, params, body, orelse;
  std::vector<std::pair<NodePtr, NodeList>> branches;
  int depth = 1;  // height of this expression's tree (bounded by kMaxSyntaxDepth)

  Node(NodeKind k, SourcePos p) : kind(k), pos(p) {}
};

}  // namespace strata::jinja

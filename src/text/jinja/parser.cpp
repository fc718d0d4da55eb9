#include "text/jinja/parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>

#include "text/jinja/lexer.h"
#include "text/jinja/limits.h"

namespace strata::jinja {
namespace {

bool one_of(std::string_view s, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

std::string describe(const Token& t) {
  switch (t.type) {
    case Tok::kName: return "'" + t.value + "'";
    case Tok::kString: return "string literal";
    case Tok::kNumber: return "number " + t.value;
    case Tok::kText: return "text";
    case Tok::kComment: return "comment";
    default: return "'" + t.value + "'";
  }
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  NodePtr run() {
    auto root = std::make_unique<Node>(NodeKind::kTemplate, SourcePos{1, 1});
    while (cur_ < t_.size())
      if (NodePtr n = parse_any()) root->body.push_back(std::move(n));
    return root;
  }

 private:
  // Nesting of the parse functions: each nested block, bracket or operand adds one.
  struct Nest {
    explicit Nest(Parser& p) : p_(p) {
      if (++p_.nesting_ > kMaxSyntaxDepth)
        p_.error("template nested more than " + std::to_string(kMaxSyntaxDepth) + " levels deep");
    }
    ~Nest() { --p_.nesting_; }
    Parser& p_;
  };

  // Blocks where break/continue would leave a loop that is not theirs (macro, call, filter and
  // set bodies) start counting loops from zero.
  struct LoopScope {
    LoopScope(Parser& p, int loops) : p_(p), saved_(p.loops_) { p_.loops_ = loops; }
    ~LoopScope() { p_.loops_ = saved_; }
    Parser& p_;
    int saved_;
  };

  SourcePos here() const {
    if (cur_ < t_.size()) return t_[cur_].pos;
    return t_.empty() ? SourcePos{1, 1} : t_.back().pos;
  }
  [[noreturn]] void error(const std::string& msg) const { throw TemplateError(msg, here()); }
  [[noreturn]] void unexpected(const char* context) const {
    if (cur_ >= t_.size()) error(std::string("unexpected end of template ") + context);
    error("unexpected " + describe(t_[cur_]) + " " + context);
  }

  bool is(Tok type, size_t ahead = 0) const { return cur_ + ahead < t_.size() && t_[cur_ + ahead].type == type; }
  bool is_name(std::string_view name, size_t ahead = 0) const {
    return is(Tok::kName, ahead) && t_[cur_ + ahead].value == name;
  }
  bool is_statement(std::initializer_list<std::string_view> names) const {
    return is(Tok::kOpenStatement) && is(Tok::kName, 1) && one_of(t_[cur_ + 1].value, names);
  }
  const Token& expect(Tok type, const char* context) {
    if (!is(type)) unexpected(context);
    return t_[cur_++];
  }
  void expect_name(std::string_view name, const char* context) {
    if (!is_name(name)) unexpected(context);
    ++cur_;
  }

  NodePtr node(NodeKind k, SourcePos p) { return std::make_unique<Node>(k, p); }

  // Records the height of an expression tree; chains of operators are built in loops, so the
  // height is bounded here rather than by the parser's own recursion.
  NodePtr finish(NodePtr n) {
    int h = 0;
    for (const NodePtr* c : {&n->a, &n->b, &n->c})
      if (*c) h = std::max(h, (*c)->depth);
    for (const NodeList* l : {&n->items, &n->values})
      for (const NodePtr& c : *l)
        if (c) h = std::max(h, c->depth);
    n->depth = h + 1;
    if (n->depth > kMaxExpressionHeight)
      throw TemplateError("expression nested more than " + std::to_string(kMaxExpressionHeight) + " levels deep", n->pos);
    return n;
  }

  // ---- statements ----

  NodePtr parse_any() {
    Nest nest(*this);
    const Token& t = t_[cur_];
    switch (t.type) {
      case Tok::kComment: ++cur_; return nullptr;
      case Tok::kText: {
        auto n = node(NodeKind::kText, t.pos);
        n->name = t.value;
        ++cur_;
        return n;
      }
      case Tok::kOpenStatement: return parse_statement();
      case Tok::kOpenExpression: {
        ++cur_;
        auto n = node(NodeKind::kOutput, t.pos);
        n->a = parse_expression();
        expect(Tok::kCloseExpression, "in {{ }} (expected '}}')");
        return n;
      }
      default: unexpected("outside a tag");
    }
  }

  // Statements up to one of `ends` (not consumed); `what` names the block for the message.
  NodeList parse_body(std::initializer_list<std::string_view> ends, const char* what, SourcePos opened) {
    NodeList body;
    while (!is_statement(ends)) {
      if (cur_ >= t_.size())
        throw TemplateError(std::string(what) + " opened here is never closed", opened);
      if (NodePtr n = parse_any()) body.push_back(std::move(n));
    }
    return body;
  }

  void end_tag(std::string_view name) {
    expect(Tok::kOpenStatement, "(expected '{%')");
    expect_name(name, "(expected the closing tag)");
    expect(Tok::kCloseStatement, "(expected '%}')");
  }

  NodePtr parse_statement() {
    const SourcePos pos = here();
    ++cur_;  // {%
    if (!is(Tok::kName)) unexpected("after '{%' (expected a statement name)");
    const std::string name = t_[cur_++].value;
    if (name == "set") return parse_set(pos);
    if (name == "if") return parse_if(pos);
    if (name == "for") return parse_for(pos);
    if (name == "macro") return parse_macro(pos);
    if (name == "call") return parse_call_block(pos);
    if (name == "filter") return parse_filter_block(pos);
    if (name == "raw") return parse_raw(pos);
    if (name == "break" || name == "continue") {
      if (loops_ == 0) throw TemplateError("{% " + name + " %} outside a loop", pos);
      expect(Tok::kCloseStatement, "(expected '%}')");
      return node(name == "break" ? NodeKind::kBreak : NodeKind::kContinue, pos);
    }
    if (one_of(name, {"include", "import", "from", "extends", "block", "with", "do", "autoescape", "trans"}))
      throw TemplateError("{% " + name + " %} is not supported", pos);
    if (name.starts_with("end") || one_of(name, {"elif", "else"}))
      throw TemplateError("{% " + name + " %} without a matching opening tag", pos);
    throw TemplateError("unknown statement {% " + name + " %}", pos);
  }

  NodePtr parse_set(SourcePos pos) {
    auto n = node(NodeKind::kSet, pos);
    n->a = parse_sequence(false);
    const NodeKind k = n->a->kind;
    bool ok = k == NodeKind::kName || k == NodeKind::kAttribute;
    if (k == NodeKind::kTuple)
      ok = std::all_of(n->a->items.begin(), n->a->items.end(), [](const NodePtr& e) { return e->kind == NodeKind::kName; });
    if (!ok) throw TemplateError("{% set %} can assign only to names and namespace attributes", n->a->pos);
    if (is(Tok::kEquals)) {
      ++cur_;
      n->b = parse_sequence(false);
    } else {
      expect(Tok::kCloseStatement, "in {% set %} (expected '=' or '%}')");
      LoopScope ls(*this, 0);
      n->body = parse_body({"endset"}, "{% set %}", pos);
      expect(Tok::kOpenStatement, "");
      ++cur_;  // endset
    }
    expect(Tok::kCloseStatement, "in {% set %} (expected '%}')");
    return n;
  }

  NodePtr parse_if(SourcePos pos) {
    auto n = node(NodeKind::kIf, pos);
    for (;;) {
      NodePtr test = parse_expression();
      expect(Tok::kCloseStatement, "in {% if %} (expected '%}')");
      NodeList body = parse_body({"elif", "else", "endif"}, "{% if %}", pos);
      n->branches.emplace_back(std::move(test), std::move(body));
      if (!is_statement({"elif"})) break;
      cur_ += 2;
    }
    if (is_statement({"else"})) {
      cur_ += 2;
      expect(Tok::kCloseStatement, "in {% else %} (expected '%}')");
      n->body = parse_body({"endif"}, "{% if %}", pos);
    }
    end_tag("endif");
    return n;
  }

  NodePtr parse_for(SourcePos pos) {
    auto n = node(NodeKind::kFor, pos);
    n->a = parse_sequence(true);
    const NodeKind k = n->a->kind;
    bool ok = k == NodeKind::kName;
    if (k == NodeKind::kTuple)
      ok = std::all_of(n->a->items.begin(), n->a->items.end(), [](const NodePtr& e) { return e->kind == NodeKind::kName; });
    if (!ok) throw TemplateError("{% for %} needs a name or names as its loop variable", n->a->pos);
    expect_name("in", "in {% for %} (expected 'in')");
    NodePtr iterable = parse_expression();
    if (iterable->kind == NodeKind::kSelect) {
      n->b = std::move(iterable->a);
      n->c = std::move(iterable->b);
    } else {
      n->b = std::move(iterable);
    }
    if (is_name("recursive")) error("recursive loops are not supported");
    expect(Tok::kCloseStatement, "in {% for %} (expected '%}')");
    {
      LoopScope ls(*this, loops_ + 1);
      n->body = parse_body({"endfor", "else"}, "{% for %}", pos);
    }
    if (is_statement({"else"})) {
      cur_ += 2;
      expect(Tok::kCloseStatement, "in {% else %} (expected '%}')");
      n->orelse = parse_body({"endfor"}, "{% for %}", pos);
    }
    end_tag("endfor");
    return n;
  }

  NodePtr parse_macro(SourcePos pos) {
    auto n = node(NodeKind::kMacro, pos);
    if (!is(Tok::kName)) unexpected("in {% macro %} (expected its name)");
    n->name = t_[cur_++].value;
    n->params = parse_args(true);
    expect(Tok::kCloseStatement, "in {% macro %} (expected '%}')");
    LoopScope ls(*this, 0);
    n->body = parse_body({"endmacro"}, "{% macro %}", pos);
    end_tag("endmacro");
    return n;
  }

  NodePtr parse_call_block(SourcePos pos) {
    auto n = node(NodeKind::kCallBlock, pos);
    if (is(Tok::kOpenParen)) n->params = parse_args(true);
    if (!is(Tok::kName)) unexpected("in {% call %} (expected a macro name)");
    auto callee = node(NodeKind::kName, here());
    callee->name = t_[cur_++].value;
    auto call = node(NodeKind::kCall, callee->pos);
    call->a = std::move(callee);
    call->items = parse_args(false);
    n->a = finish(std::move(call));
    expect(Tok::kCloseStatement, "in {% call %} (expected '%}')");
    LoopScope ls(*this, 0);
    n->body = parse_body({"endcall"}, "{% call %}", pos);
    end_tag("endcall");
    return n;
  }

  NodePtr parse_filter_block(SourcePos pos) {
    auto n = node(NodeKind::kFilterBlock, pos);
    if (!is(Tok::kName)) unexpected("in {% filter %} (expected a filter name)");
    auto f = node(NodeKind::kFilter, here());
    f->name = t_[cur_++].value;
    if (is(Tok::kOpenParen)) {
      f->flag = true;
      f->items = parse_args(false);
    }
    n->a = finish(std::move(f));
    expect(Tok::kCloseStatement, "in {% filter %} (expected '%}')");
    LoopScope ls(*this, 0);
    n->body = parse_body({"endfilter"}, "{% filter %}", pos);
    end_tag("endfilter");
    return n;
  }

  NodePtr parse_raw(SourcePos pos) {
    expect(Tok::kCloseStatement, "in {% raw %} (expected '%}')");
    auto n = node(NodeKind::kText, pos);
    if (is(Tok::kText)) n->name = t_[cur_++].value;
    end_tag("endraw");
    return n;
  }

  // ---- expressions ----

  NodePtr parse_expression() {
    Nest nest(*this);
    NodePtr a = parse_or();
    if (!is_name("if")) return a;
    const SourcePos pos = here();
    ++cur_;
    NodePtr test = parse_or();
    if (is_name("else")) {
      ++cur_;
      auto n = node(NodeKind::kTernary, pos);
      n->a = std::move(a);
      n->b = std::move(test);
      n->c = parse_expression();
      return finish(std::move(n));
    }
    auto n = node(NodeKind::kSelect, pos);
    n->a = std::move(a);
    n->b = std::move(test);
    return finish(std::move(n));
  }

  NodePtr binary(BinOp op, SourcePos pos, NodePtr l, NodePtr r) {
    auto n = node(NodeKind::kBinary, pos);
    n->op = op;
    n->a = std::move(l);
    n->b = std::move(r);
    return finish(std::move(n));
  }

  NodePtr parse_or() {
    NodePtr l = parse_and();
    while (is_name("or")) {
      const SourcePos pos = t_[cur_++].pos;
      l = binary(BinOp::kOr, pos, std::move(l), parse_and());
    }
    return l;
  }

  NodePtr parse_and() {
    NodePtr l = parse_not();
    while (is_name("and")) {
      const SourcePos pos = t_[cur_++].pos;
      l = binary(BinOp::kAnd, pos, std::move(l), parse_not());
    }
    return l;
  }

  NodePtr parse_not() {
    if (!is_name("not")) return parse_comparison();
    Nest nest(*this);
    auto n = node(NodeKind::kNot, t_[cur_++].pos);
    n->a = parse_not();
    return finish(std::move(n));
  }

  NodePtr parse_comparison() {
    NodePtr l = parse_additive();
    for (;;) {
      BinOp op;
      const SourcePos pos = here();
      if (is_name("not") && is_name("in", 1)) {
        op = BinOp::kNotIn;
        cur_ += 2;
      } else if (is_name("in")) {
        op = BinOp::kIn;
        ++cur_;
      } else if (is(Tok::kComparison)) {
        const std::string& v = t_[cur_++].value;
        op = v == "==" ? BinOp::kEq : v == "!=" ? BinOp::kNe : v == "<" ? BinOp::kLt : v == ">" ? BinOp::kGt
           : v == "<=" ? BinOp::kLe : BinOp::kGe;
      } else {
        return l;
      }
      l = binary(op, pos, std::move(l), parse_additive());
    }
  }

  NodePtr parse_additive() {
    NodePtr l = parse_multiplicative();
    while (is(Tok::kAdditive)) {
      const Token& t = t_[cur_++];
      l = binary(t.value == "+" ? BinOp::kAdd : t.value == "-" ? BinOp::kSub : BinOp::kConcat, t.pos, std::move(l),
                 parse_multiplicative());
    }
    return l;
  }

  NodePtr parse_multiplicative() {
    NodePtr l = parse_power();
    while (is(Tok::kMultiplicative)) {
      const Token& t = t_[cur_++];
      const BinOp op = t.value == "*" ? BinOp::kMul : t.value == "/" ? BinOp::kDiv : t.value == "//" ? BinOp::kFloorDiv : BinOp::kMod;
      l = binary(op, t.pos, std::move(l), parse_power());
    }
    return l;
  }

  NodePtr parse_power() {
    // Left-associative, as in Jinja2 (unlike Python): 2 ** 3 ** 2 == 64.
    NodePtr l = parse_test();
    while (is(Tok::kPower)) {
      const SourcePos pos = t_[cur_++].pos;
      l = binary(BinOp::kPow, pos, std::move(l), parse_test());
    }
    return l;
  }

  // Whether the token after a test name is its one argument written without parentheses, as
  // Jinja2 reads `x is divisibleby 3`.
  bool starts_test_argument() const {
    if (is(Tok::kNumber) || is(Tok::kString) || is(Tok::kOpenBracket) || is(Tok::kOpenBrace)) return true;
    return is(Tok::kName) && !one_of(t_[cur_].value, {"else", "or", "and", "if", "in", "not", "is"});
  }

  NodePtr parse_test() {
    NodePtr operand = parse_filter();
    while (is_name("is")) {
      auto n = node(NodeKind::kTest, t_[cur_++].pos);
      if (is_name("not")) {
        n->flag = true;
        ++cur_;
      }
      if (!is(Tok::kName)) unexpected("after 'is' (expected a test name)");
      n->name = t_[cur_++].value;
      if (is(Tok::kOpenParen)) {
        n->items = parse_args(false);
      } else if (starts_test_argument()) {
        n->items.push_back(parse_call_member());
      }
      n->a = std::move(operand);
      operand = finish(std::move(n));
    }
    return operand;
  }

  NodePtr parse_filter() {
    NodePtr operand = parse_unary();
    while (is(Tok::kPipe)) {
      ++cur_;
      if (!is(Tok::kName)) unexpected("after '|' (expected a filter name)");
      auto n = node(NodeKind::kFilter, t_[cur_].pos);
      n->name = t_[cur_++].value;
      if (is(Tok::kOpenParen)) {
        n->flag = true;
        n->items = parse_args(false);
      }
      n->a = std::move(operand);
      operand = finish(std::move(n));
    }
    return operand;
  }

  NodePtr parse_unary() {
    if ((is(Tok::kUnary) || is(Tok::kAdditive)) && (t_[cur_].value == "-" || t_[cur_].value == "+")) {
      Nest nest(*this);
      auto n = node(NodeKind::kNegate, t_[cur_].pos);
      n->name = t_[cur_++].value;
      n->a = parse_unary();
      return finish(std::move(n));
    }
    return parse_call_member();
  }

  NodePtr parse_call_member() {
    NodePtr e = parse_postfix(parse_primary());
    while (is(Tok::kOpenParen)) {
      auto n = node(NodeKind::kCall, e->pos);
      n->a = std::move(e);
      n->items = parse_args(false);
      e = parse_postfix(finish(std::move(n)));
    }
    return e;
  }

  // Attribute access and subscripts: x.name, x.0, x[expr], x[a:b:c].
  NodePtr parse_postfix(NodePtr obj) {
    while (is(Tok::kDot) || is(Tok::kOpenBracket)) {
      const SourcePos pos = here();
      if (t_[cur_++].type == Tok::kDot) {
        if (is(Tok::kName)) {
          auto n = node(NodeKind::kAttribute, pos);
          n->name = t_[cur_++].value;
          n->a = std::move(obj);
          obj = finish(std::move(n));
        } else if (is(Tok::kNumber) && t_[cur_].value.find('.') == std::string::npos) {
          auto n = node(NodeKind::kIndex, pos);
          n->b = parse_primary();
          n->a = std::move(obj);
          obj = finish(std::move(n));
        } else {
          unexpected("after '.' (expected an attribute name)");
        }
        continue;
      }
      Nest nest(*this);
      NodeList parts;
      bool slice = false;
      while (!is(Tok::kCloseBracket)) {
        if (cur_ >= t_.size()) unexpected("in a subscript (expected ']')");
        if (is(Tok::kColon)) {
          parts.push_back(nullptr);
          ++cur_;
          slice = true;
        } else {
          parts.push_back(parse_expression());
          if (is(Tok::kColon)) {
            ++cur_;
            slice = true;
          }
        }
      }
      ++cur_;  // ]
      if (parts.empty()) throw TemplateError("empty subscript []", pos);
      if (slice) {
        if (parts.size() > 3) throw TemplateError("a slice has at most three parts", pos);
        auto n = node(NodeKind::kSlice, pos);
        n->a = std::move(obj);
        n->items = std::move(parts);
        n->items.resize(3);
        obj = finish(std::move(n));
      } else {
        if (parts.size() > 1) throw TemplateError("subscript with more than one index", pos);
        auto n = node(NodeKind::kIndex, pos);
        n->a = std::move(obj);
        n->b = std::move(parts[0]);
        obj = finish(std::move(n));
      }
    }
    return obj;
  }

  // Arguments of a call (`parameters` false) or parameters of a macro or call block.
  NodeList parse_args(bool parameters) {
    Nest nest(*this);
    expect(Tok::kOpenParen, "(expected '(')");
    NodeList args;
    std::vector<std::string> names;
    bool keyword_seen = false, spread_seen = false;
    while (!is(Tok::kCloseParen)) {
      if (cur_ >= t_.size()) unexpected("in an argument list (expected ')')");
      const SourcePos pos = here();
      const bool kw_spread = is(Tok::kPower);
      const bool spread = is(Tok::kMultiplicative) && t_[cur_].value == "*";
      if (parameters && (kw_spread || spread)) error("argument unpacking in a parameter list");
      if (kw_spread) {
        ++cur_;
        auto n = node(NodeKind::kKeywordSpread, pos);
        n->a = parse_expression();
        args.push_back(finish(std::move(n)));
        if (is(Tok::kComma)) ++cur_;
        if (!is(Tok::kCloseParen)) error("'**' must come last in an argument list");
        break;
      }
      NodePtr arg;
      if (spread) {
        if (spread_seen) error("only one '*' unpacking per call");
        spread_seen = true;
        ++cur_;
        arg = node(NodeKind::kSpread, pos);
        arg->a = parse_expression();
        arg = finish(std::move(arg));
      } else {
        arg = parse_expression();
        if (is(Tok::kEquals)) {
          ++cur_;
          if (arg->kind != NodeKind::kName)
            throw TemplateError(parameters ? "a parameter must be a name" : "a keyword argument must be a name", arg->pos);
          auto kw = node(NodeKind::kKeyword, arg->pos);
          kw->name = arg->name;
          kw->a = parse_expression();
          arg = finish(std::move(kw));
        }
        if (parameters) {
          if (arg->kind != NodeKind::kName && arg->kind != NodeKind::kKeyword)
            throw TemplateError("a parameter must be a name", arg->pos);
          if (std::find(names.begin(), names.end(), arg->name) != names.end())
            throw TemplateError("duplicate parameter '" + arg->name + "'", arg->pos);
          names.push_back(arg->name);
        }
        if (arg->kind == NodeKind::kKeyword) {
          keyword_seen = true;
        } else if (keyword_seen) {
          throw TemplateError(parameters ? "a parameter without a default follows one with a default"
                                         : "a positional argument follows a keyword argument",
                              arg->pos);
        } else if (spread_seen) {
          throw TemplateError("a positional argument follows '*' unpacking", arg->pos);
        }
      }
      args.push_back(std::move(arg));
      if (is(Tok::kComma)) ++cur_;
    }
    ++cur_;  // )
    return args;
  }

  // `a, b, c` as a tuple (one expression stays itself); `primary` takes primary expressions only
  // (a for loop's targets, which are followed by `in`).
  NodePtr parse_sequence(bool primary) {
    NodePtr first = primary ? parse_primary() : parse_expression();
    if (!is(Tok::kComma)) return first;
    auto n = node(NodeKind::kTuple, first->pos);
    n->items.push_back(std::move(first));
    while (is(Tok::kComma)) {
      ++cur_;
      // A trailing comma, as in (a,), ends the tuple.
      if (is(Tok::kCloseParen) || is(Tok::kCloseStatement) || is(Tok::kEquals) || is_name("in")) break;
      n->items.push_back(primary ? parse_primary() : parse_expression());
    }
    return finish(std::move(n));
  }

  NodePtr parse_primary() {
    if (cur_ >= t_.size()) unexpected("(expected an expression)");
    const Token& t = t_[cur_++];
    switch (t.type) {
      case Tok::kNumber: {
        const bool is_float = t.value.find('.') != std::string::npos;
        auto n = node(is_float ? NodeKind::kFloat : NodeKind::kInteger, t.pos);
        double v = 0;
        const char* b = t.value.data();
        if (*b == '+') ++b;
        auto r = std::from_chars(b, t.value.data() + t.value.size(), v);
        if (r.ec == std::errc::result_out_of_range) v = t.value[0] == '-' ? -HUGE_VAL : HUGE_VAL;
        n->number = v;
        return n;
      }
      case Tok::kString: {
        auto n = node(NodeKind::kString, t.pos);
        n->name = t.value;
        while (is(Tok::kString)) n->name += t_[cur_++].value;  // "a" "b" is "ab"
        return n;
      }
      case Tok::kName: {
        auto n = node(NodeKind::kName, t.pos);
        n->name = t.value;
        return n;
      }
      case Tok::kOpenParen: {
        Nest nest(*this);
        NodePtr e = parse_sequence(false);
        expect(Tok::kCloseParen, "(expected ')')");
        return e;
      }
      case Tok::kOpenBracket: {
        Nest nest(*this);
        auto n = node(NodeKind::kList, t.pos);
        while (!is(Tok::kCloseBracket)) {
          if (cur_ >= t_.size()) unexpected("in a list (expected ']')");
          n->items.push_back(parse_expression());
          if (is(Tok::kComma)) ++cur_;
        }
        ++cur_;
        return finish(std::move(n));
      }
      case Tok::kOpenBrace: {
        Nest nest(*this);
        auto n = node(NodeKind::kDict, t.pos);
        while (!is(Tok::kCloseBrace)) {
          if (cur_ >= t_.size()) unexpected("in a dict (expected '}')");
          n->items.push_back(parse_expression());
          expect(Tok::kColon, "in a dict (expected ':')");
          n->values.push_back(parse_expression());
          if (is(Tok::kComma)) ++cur_;
        }
        ++cur_;
        return finish(std::move(n));
      }
      default:
        --cur_;
        unexpected("(expected an expression)");
    }
  }

  std::vector<Token> t_;
  size_t cur_ = 0;
  int nesting_ = 0;
  int loops_ = 0;
};

}  // namespace

NodePtr parse_template(std::string_view source) { return Parser(tokenize(source)).run(); }

}  // namespace strata::jinja

#include "text/jinja/interpreter.h"

#include <cmath>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"
#include "text/jinja/js_text.h"
#include "text/jinja/limits.h"
#include "text/utf8.h"

namespace strata::jinja {
namespace {

const char* op_name(BinOp op) {
  switch (op) {
    case BinOp::kAnd: return "and";
    case BinOp::kOr: return "or";
    case BinOp::kEq: return "==";
    case BinOp::kNe: return "!=";
    case BinOp::kLt: return "<";
    case BinOp::kGt: return ">";
    case BinOp::kLe: return "<=";
    case BinOp::kGe: return ">=";
    case BinOp::kIn: return "in";
    case BinOp::kNotIn: return "not in";
    case BinOp::kAdd: return "+";
    case BinOp::kSub: return "-";
    case BinOp::kConcat: return "~";
    case BinOp::kMul: return "*";
    case BinOp::kDiv: return "/";
    case BinOp::kFloorDiv: return "//";
    case BinOp::kMod: return "%";
    case BinOp::kPow: return "**";
  }
  return "?";
}

bool numeric_like(const Value& v) { return v.is_number() || v.is_bool(); }
double numeric_of(const Value& v) { return v.is_bool() ? double(v.as_bool()) : v.num(); }

// A double index made safe to convert: far outside any container becomes a large sentinel.
long long clamp_index(double d) { return d > 1e15 ? (long long)1e15 : d < -1e15 ? (long long)-1e15 : (long long)d; }

std::vector<Value> code_point_values(const std::string& s) {
  std::vector<Value> out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = size_t(utf8_next(s, i).len);
    out.push_back(Value::string(s.substr(i, n)));
    i += n;
  }
  return out;
}

// The reference's slice(): Python's rules, except that an explicit stop of -1 with a negative
// step reaches the first item.
std::vector<size_t> slice_indices(size_t size, const Value& start_v, const Value& stop_v, const Value& step_v) {
  const double len = double(size);
  const double step = step_v.is_undefined() ? 1 : step_v.num();
  double start, stop;
  if (step >= 0) {
    start = start_v.is_undefined() ? 0 : start_v.num() < 0 ? std::max(len + start_v.num(), 0.0) : std::min(start_v.num(), len);
    stop = stop_v.is_undefined() ? len : stop_v.num() < 0 ? std::max(len + stop_v.num(), 0.0) : std::min(stop_v.num(), len);
  } else {
    start = start_v.is_undefined() ? len - 1
            : start_v.num() < 0   ? std::max(len + start_v.num(), -1.0)
                                  : std::min(start_v.num(), len - 1);
    stop = stop_v.is_undefined() ? -1 : stop_v.num() < -1 ? std::max(len + stop_v.num(), -1.0) : std::min(stop_v.num(), len - 1);
  }
  std::vector<size_t> out;
  if (step == 0) return out;
  const double dir = step > 0 ? 1 : -1;
  for (double i = start; dir * i < dir * stop; i += step) out.push_back(size_t(i));
  return out;
}

void collect_specials(const Node* n, bool& caller, bool& varargs, bool& kwargs) {
  if (!n) return;
  if (n->kind == NodeKind::kName) {
    caller = caller || n->name == "caller";
    varargs = varargs || n->name == "varargs";
    kwargs = kwargs || n->name == "kwargs";
  }
  for (const NodePtr* c : {&n->a, &n->b, &n->c}) collect_specials(c->get(), caller, varargs, kwargs);
  for (const NodeList* l : {&n->items, &n->values, &n->params, &n->body, &n->orelse})
    for (const NodePtr& c : *l) collect_specials(c.get(), caller, varargs, kwargs);
  for (const auto& [test, body] : n->branches) {
    collect_specials(test.get(), caller, varargs, kwargs);
    for (const NodePtr& c : body) collect_specials(c.get(), caller, varargs, kwargs);
  }
}

// l ~ r, and + with a string: JavaScript's string conversion of each side, undefined as "".
Value concat(const Value& l, const Value& r) {
  std::string tl, tr;
  auto piece = [](const Value& v, std::string& tmp) -> std::string_view {
    if (v.is_string()) return v.str();
    if (v.is_undefined()) return {};
    tmp = raw_string(v);
    return tmp;
  };
  const std::string_view a = piece(l, tl), b = piece(r, tr);
  if (a.size() + b.size() > kMaxStringBytes) fail("string longer than " + std::to_string(kMaxStringBytes) + " bytes");
  std::string out;
  out.reserve(a.size() + b.size());
  out += a;
  out += b;
  return Value::string(std::move(out));
}

// Kinds of expression that build a new string or list, whose size is charged as work.
bool builds_value(NodeKind k) {
  return k == NodeKind::kBinary || k == NodeKind::kFilter || k == NodeKind::kCall || k == NodeKind::kSlice ||
         k == NodeKind::kList || k == NodeKind::kTuple || k == NodeKind::kDict;
}

struct DepthGuard {
  DepthGuard(int& d, int limit, const char* what) : d_(d) {
    if (++d_ > limit) {
      --d_;
      fail(std::string(what) + " nested more than " + std::to_string(limit) + " levels deep");
    }
  }
  ~DepthGuard() { --d_; }
  int& d_;
};

}  // namespace

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return &it->second;
  }
  return nullptr;
}

Interpreter::Interpreter(uint64_t max_steps) : max_steps_(max_steps) {}

Interpreter::~Interpreter() {
  // Namespaces are the only values that can refer to themselves; emptying them first breaks
  // every cycle, and since they are held here, releasing the rest never recurses through one.
  for (auto& ns : namespaces_) ns->entries.clear();
  scopes_.clear();
  namespaces_.clear();
}

Value Interpreter::make_namespace() {
  Value ns = Value::object(ObjectData::Kind::kNamespace);
  namespaces_.push_back(ns.object_ptr());
  return ns;
}

Scope* Interpreter::new_scope(Scope* parent) {
  scopes_.emplace_back();
  scopes_.back().parent = parent;
  return &scopes_.back();
}

void Interpreter::count_step(uint64_t n) {
  steps_ += n;
  if (steps_ > max_steps_)
    fail("the template ran for more than " + std::to_string(max_steps_) + " steps (an endless loop?)");
}

void Interpreter::charge(const Value& v) {
  // Copying text and lists is work too: without this, a loop that grows a string by a little
  // each time would take quadratic time within the step limit.
  if (v.is_string()) count_step(v.str().size() / kBytesPerStep);
  else if (v.is_array()) count_step(v.items().size() / kItemsPerStep);
}

std::string Interpreter::render(const Node& root, const nlohmann::ordered_json& variables) {
  Scope* global = new_scope(nullptr);
  install_globals(*global, *this);
  if (!variables.is_object()) fail("template variables must be a JSON object");
  for (const auto& [k, v] : variables.items()) {
    if (global->vars.count(k)) fail("variable '" + k + "' would hide the builtin of that name");
    global->set(k, Value::from_json(v));
  }
  std::string out;
  render_block(root.body, global, out);
  return out;
}

Interpreter::Flow Interpreter::render_block(const NodeList& body, Scope* s, std::string& out) {
  for (const NodePtr& n : body) {
    const size_t before = out.size();
    const Flow f = render_statement(*n, s, out);
    count_step((out.size() - before) / kBytesPerStep);
    if (f != Flow::kNormal) return f;
    if (out.size() > kMaxStringBytes) throw TemplateError("output longer than " + std::to_string(kMaxStringBytes) + " bytes", n->pos);
  }
  return Flow::kNormal;
}

std::string Interpreter::render_to_string(const NodeList& body, Scope* s) {
  std::string out;
  render_block(body, s, out);  // the parser keeps break/continue inside their loops
  return out;
}

Interpreter::Flow Interpreter::render_statement(const Node& n, Scope* s, std::string& out) {
  try {
    count_step();
    DepthGuard guard(depth_, kMaxEvalDepth, "evaluation");
    switch (n.kind) {
      case NodeKind::kText: out += n.name; return Flow::kNormal;
      case NodeKind::kOutput: {
        const Value v = eval(*n.a, s);
        if (v.is_string()) out += v.str();
        else if (!v.is_none() && !v.is_undefined()) out += display_string(v);
        return Flow::kNormal;
      }
      case NodeKind::kIf:
        for (const auto& [test, body] : n.branches)
          if (eval(*test, s).truthy()) return render_block(body, s, out);
        return render_block(n.body, s, out);
      case NodeKind::kFor: render_for(n, s, out); return Flow::kNormal;
      case NodeKind::kSet: execute_set(n, s); return Flow::kNormal;
      case NodeKind::kMacro: {
        auto fn = std::make_shared<FunctionData>();
        fn->kind = FunctionData::Kind::kMacro;
        fn->name = n.name;
        fn->node = &n;
        fn->scope = s;
        s->set(n.name, Value::function(std::move(fn)));
        return Flow::kNormal;
      }
      case NodeKind::kCallBlock: {
        auto caller = std::make_shared<FunctionData>();
        caller->kind = FunctionData::Kind::kCaller;
        caller->name = "caller";
        caller->node = &n;
        caller->scope = s;
        const Node& call_node = *n.a;
        CallArgs args = eval_args(call_node.items, s);
        const Value fn = eval(*call_node.a, s);
        if (!fn.is_function()) fail("{% call %} needs a macro, '" + call_node.a->name + "' is " + fn.a_type());
        Scope* site = new_scope(s);
        site->call_block = true;
        site->set("caller", Value::function(std::move(caller)));
        const Value v = call(fn, std::move(args), site);
        if (!v.is_none() && !v.is_undefined()) out += display_string(v);
        return Flow::kNormal;
      }
      case NodeKind::kFilterBlock: {
        const Value body = Value::string(render_to_string(n.body, s));
        const Value v = eval_filter(*n.a, body, s);
        if (!v.is_none() && !v.is_undefined()) out += display_string(v);
        return Flow::kNormal;
      }
      case NodeKind::kBreak: return Flow::kBreak;
      case NodeKind::kContinue: return Flow::kContinue;
      default: {
        const Value v = eval(n, s);
        if (!v.is_none() && !v.is_undefined()) out += display_string(v);
        return Flow::kNormal;
      }
    }
  } catch (const TemplateError& e) {
    if (!e.located()) throw TemplateError(e.message(), n.pos);
    throw;
  }
}

void Interpreter::render_for(const Node& n, Scope* s, std::string& out) {
  Scope* scope = new_scope(s);
  const Value iterable = eval(*n.b, scope);
  std::vector<Value> candidates;
  if (iterable.is_array()) candidates = iterable.items();
  else if (iterable.is_mapping())
    for (const auto& e : iterable.obj().entries) candidates.push_back(Value::string(e.first));
  else if (iterable.is_string()) candidates = code_point_values(iterable.str());
  else if (!iterable.is_undefined())  // as in Jinja2, an undefined value loops zero times
    throw TemplateError(std::string("cannot loop over ") + iterable.a_type(), n.b->pos);

  const Node& target = *n.a;
  auto bind = [&](Scope* into, const Value& item) {
    if (target.kind == NodeKind::kName) {
      into->set(target.name, item);
      return;
    }
    if (!item.is_array()) fail(std::string("cannot unpack ") + item.a_type() + " into the loop variables");
    if (item.items().size() != target.items.size())
      fail("cannot unpack " + std::to_string(item.items().size()) + " items into " +
           std::to_string(target.items.size()) + " loop variables");
    for (size_t j = 0; j < target.items.size(); ++j) into->set(target.items[j]->name, item.items()[j]);
  };

  std::vector<Value> items;
  if (target.kind == NodeKind::kName && !n.c) {
    items = std::move(candidates);
  } else {
    Scope* test_scope = n.c ? new_scope(scope) : nullptr;
    for (Value& item : candidates) {
      if (!n.c) {
        bind(scope, item);  // checks the unpacking before the first iteration
      } else {
        test_scope->vars.clear();
        bind(test_scope, item);
        if (!eval(*n.c, test_scope).truthy()) continue;
      }
      items.push_back(std::move(item));
    }
  }

  const size_t len = items.size();
  for (size_t i = 0; i < len; ++i) {
    count_step();  // an iteration is a step even when its body is empty
    Value loop = Value::object();
    ObjectData& l = loop.obj();
    l.entries.reserve(9);
    l.entries.emplace_back("index", Value::integer(double(i + 1)));
    l.entries.emplace_back("index0", Value::integer(double(i)));
    l.entries.emplace_back("revindex", Value::integer(double(len - i)));
    l.entries.emplace_back("revindex0", Value::integer(double(len - i - 1)));
    l.entries.emplace_back("first", Value::boolean(i == 0));
    l.entries.emplace_back("last", Value::boolean(i + 1 == len));
    l.entries.emplace_back("length", Value::integer(double(len)));
    l.entries.emplace_back("previtem", i > 0 ? items[i - 1] : Value());
    l.entries.emplace_back("nextitem", i + 1 < len ? items[i + 1] : Value());
    l.depth = 1 + std::max(l.entries[7].second.depth(), l.entries[8].second.depth());
    scope->set("loop", std::move(loop));
    bind(scope, items[i]);
    if (render_block(n.body, scope, out) == Flow::kBreak) break;
  }
  if (len == 0) render_block(n.orelse, scope, out);
}

void Interpreter::execute_set(const Node& n, Scope* s) {
  Value rhs = n.b ? eval(*n.b, s) : Value::string(render_to_string(n.body, s));
  const Node& target = *n.a;
  switch (target.kind) {
    case NodeKind::kName: s->set(target.name, std::move(rhs)); return;
    case NodeKind::kTuple: {
      if (!rhs.is_array()) fail(std::string("cannot unpack ") + rhs.a_type() + " in {% set %}");
      if (rhs.items().size() != target.items.size())
        fail("cannot unpack " + std::to_string(rhs.items().size()) + " items into " +
             std::to_string(target.items.size()) + " names");
      for (size_t i = 0; i < target.items.size(); ++i) s->set(target.items[i]->name, rhs.items()[i]);
      return;
    }
    case NodeKind::kAttribute: {
      const Value obj = eval(*target.a, s);
      if (!obj.is_namespace())
        throw TemplateError(std::string("cannot set an attribute of ") + obj.a_type() +
                                " (only namespace() objects can be changed)",
                            target.pos);
      obj.obj().set(target.name, std::move(rhs));
      return;
    }
    default: fail("invalid {% set %} target");
  }
}

Value Interpreter::eval(const Node& n, Scope* s) {
  try {
    count_step();
    DepthGuard guard(depth_, kMaxEvalDepth, "evaluation");
    Value v = eval_node(n, s);
    if (builds_value(n.kind)) charge(v);
    return v;
  } catch (const TemplateError& e) {
    if (!e.located()) throw TemplateError(e.message(), n.pos);
    throw;
  }
}

Value Interpreter::eval_node(const Node& n, Scope* s) {
  switch (n.kind) {
    case NodeKind::kName: {
      const Value* v = s->find(n.name);
      return v ? *v : Value();
    }
    case NodeKind::kInteger: return Value::integer(n.number);
    case NodeKind::kFloat: return Value::floating(n.number);
    case NodeKind::kString: return Value::string(n.name);
    case NodeKind::kList:
    case NodeKind::kTuple: {
      std::vector<Value> items;
      items.reserve(n.items.size());
      for (const NodePtr& e : n.items) items.push_back(eval(*e, s));
      return Value::array(std::move(items), n.kind == NodeKind::kTuple);
    }
    case NodeKind::kDict: {
      Value d = Value::object();
      for (size_t i = 0; i < n.items.size(); ++i) {
        const Value k = eval(*n.items[i], s);
        if (!k.is_string()) throw TemplateError(std::string("dict keys must be strings, not ") + k.a_type(), n.items[i]->pos);
        d.obj().set(k.str(), eval(*n.values[i], s));
      }
      return d;
    }
    case NodeKind::kBinary: return eval_binary(n, s);
    case NodeKind::kNot: return Value::boolean(!eval(*n.a, s).truthy());
    case NodeKind::kNegate: {
      const Value v = eval(*n.a, s);
      if (!numeric_like(v)) fail("unary " + n.name + " needs a number, not " + v.a_type());
      const double r = (n.name == "-" ? -1 : 1) * numeric_of(v);
      return Value::number(r, v.is_float());
    }
    case NodeKind::kAttribute: return eval_member(eval(*n.a, s), Value::string(n.name));
    case NodeKind::kIndex: {
      const Value obj = eval(*n.a, s);
      return eval_member(obj, eval(*n.b, s));
    }
    case NodeKind::kSlice: return eval_slice(n, s);
    case NodeKind::kCall: {
      CallArgs args = eval_args(n.items, s);
      const Value fn = eval(*n.a, s);
      if (!fn.is_function()) {
        const Node& c = *n.a;
        const std::string what = c.kind == NodeKind::kName || c.kind == NodeKind::kAttribute ? "'" + c.name + "'" : "this";
        fail("cannot call " + what + ": it is " + (fn.is_undefined() ? std::string("undefined") : fn.a_type()));
      }
      return call(fn, std::move(args), nullptr);
    }
    case NodeKind::kFilter: return eval_filter(n, eval(*n.a, s), s);
    case NodeKind::kTest: {
      const Value operand = eval(*n.a, s);
      CallArgs args = eval_args(n.items, s);
      if (!args.kw.empty()) fail("test '" + n.name + "' takes no keyword arguments");
      return Value::boolean(apply_test(n.name, operand, args.pos) != n.flag);
    }
    case NodeKind::kTernary: return eval(*n.b, s).truthy() ? eval(*n.a, s) : eval(*n.c, s);
    case NodeKind::kSelect: return eval(*n.b, s).truthy() ? eval(*n.a, s) : Value();
    default: fail("this construct is not an expression");
  }
}

Value Interpreter::eval_filter(const Node& f, Value operand, Scope* s) {
  CallArgs args = eval_args(f.items, s);
  return apply_filter(f.name, operand, args);
}

Value Interpreter::eval_binary(const Node& n, Scope* s) {
  const BinOp op = n.op;
  Value l = eval(*n.a, s);
  if (op == BinOp::kAnd) return l.truthy() ? eval(*n.b, s) : l;
  if (op == BinOp::kOr) return l.truthy() ? l : eval(*n.b, s);
  Value r = eval(*n.b, s);
  if (op == BinOp::kEq) return Value::boolean(loose_equals(l, r));
  if (op == BinOp::kNe) return Value::boolean(!loose_equals(l, r));
  auto cannot = [&]() -> Value {
    fail(std::string("cannot apply '") + op_name(op) + "' to " + l.a_type() + " and " + r.a_type());
  };

  if (l.is_number() && r.is_number() && op != BinOp::kConcat && op != BinOp::kPow) {
    const double a = l.num(), b = r.num();
    const bool is_float = l.is_float() || r.is_float();
    switch (op) {
      case BinOp::kAdd: return Value::number(a + b, is_float);
      case BinOp::kSub: return Value::number(a - b, is_float);
      case BinOp::kMul: return Value::number(a * b, is_float);
      // Jinja2 raises on a zero divisor where JavaScript would print Infinity or NaN.
      case BinOp::kDiv:
        if (b == 0) fail("division by zero");
        return Value::floating(a / b);
      case BinOp::kFloorDiv:
        if (b == 0) fail("division by zero");
        return Value::number(std::floor(a / b), is_float);
      case BinOp::kMod:
        if (b == 0) fail("modulo by zero");
        return Value::number(std::fmod(a, b), is_float);  // the sign of the dividend, as in JavaScript
      case BinOp::kLt: return Value::boolean(a < b);
      case BinOp::kGt: return Value::boolean(a > b);
      case BinOp::kLe: return Value::boolean(a <= b);
      case BinOp::kGe: return Value::boolean(a >= b);
      default: return cannot();
    }
  }
  if (l.is_undefined() || r.is_undefined()) {
    if (r.is_undefined() && (op == BinOp::kIn || op == BinOp::kNotIn)) return Value::boolean(op == BinOp::kNotIn);
    if (op == BinOp::kConcat && !l.is_none() && !r.is_none()) return concat(l, r);
    fail(std::string("cannot apply '") + op_name(op) + "' to an undefined value");
  }
  if (l.is_none() || r.is_none()) fail(std::string("cannot apply '") + op_name(op) + "' to none");
  if (op == BinOp::kConcat) return concat(l, r);
  if (op == BinOp::kPow) {
    if (!numeric_like(l) || !numeric_like(r)) return cannot();
    const double a = numeric_of(l), b = numeric_of(r);
    if (a == 0 && b < 0) fail("0 cannot be raised to a negative power");
    const double p = std::pow(a, b);
    if (!std::isfinite(p)) fail("'**' result is not a finite real number");
    return Value::number(p, l.is_float() || r.is_float() || b < 0);
  }
  if (l.is_array() && r.is_array()) {
    if (op == BinOp::kAdd) {
      if (l.items().size() + r.items().size() > kMaxListItems)
        fail("list longer than " + std::to_string(kMaxListItems) + " items");
      std::vector<Value> items;
      items.reserve(l.items().size() + r.items().size());
      items.insert(items.end(), l.items().begin(), l.items().end());
      items.insert(items.end(), r.items().begin(), r.items().end());
      return Value::array(std::move(items));
    }
  } else if (r.is_array() && (op == BinOp::kIn || op == BinOp::kNotIn)) {
    bool found = false;
    for (const Value& e : r.items()) found = found || strict_equals(e, l);
    return Value::boolean(found == (op == BinOp::kIn));
  }
  if ((l.is_string() || r.is_string()) && op == BinOp::kAdd) return concat(l, r);
  if (l.is_string() && r.is_string()) {
    if (op == BinOp::kIn || op == BinOp::kNotIn) return Value::boolean((r.str().find(l.str()) != std::string::npos) == (op == BinOp::kIn));
    // Jinja2 compares strings by code point, which UTF-8 byte order preserves.
    if (op == BinOp::kLt) return Value::boolean(l.str() < r.str());
    if (op == BinOp::kGt) return Value::boolean(l.str() > r.str());
    if (op == BinOp::kLe) return Value::boolean(l.str() <= r.str());
    if (op == BinOp::kGe) return Value::boolean(l.str() >= r.str());
  }
  if (l.is_string() && r.is_mapping() && (op == BinOp::kIn || op == BinOp::kNotIn))
    return Value::boolean((r.obj().find(l.str()) != nullptr) == (op == BinOp::kIn));
  if (op == BinOp::kMul && ((l.is_string() && r.is_int()) || (l.is_int() && r.is_string()))) {
    const std::string& str = l.is_string() ? l.str() : r.str();
    const double times = std::max(0.0, l.is_int() ? l.num() : r.num());
    if (times * double(str.size()) > double(kMaxStringBytes)) fail("string repetition longer than the output limit");
    std::string out;
    for (double i = 0; i < times; ++i) out += str;
    return Value::string(std::move(out));
  }
  return cannot();
}

Value Interpreter::eval_member(const Value& obj, const Value& key) {
  if (obj.is_object()) {
    if (!key.is_string()) fail(std::string("cannot index ") + obj.a_type() + " with " + key.a_type());
    if (const Value* v = obj.obj().find(key.str())) return *v;
    return obj.is_mapping() ? builtin_member(obj, key.str()) : Value();
  }
  if (obj.is_array() || obj.is_string()) {
    if (key.is_int()) {
      long long i = clamp_index(key.num());
      if (obj.is_string()) {
        std::string ch;
        return utf16_at(obj.str(), i, ch) ? Value::string(std::move(ch)) : Value();
      }
      const long long len = (long long)obj.items().size();
      if (i < 0) i += len;
      return i >= 0 && i < len ? obj.items()[size_t(i)] : Value();
    }
    if (key.is_string()) return builtin_member(obj, key.str());
    fail(std::string("cannot index ") + obj.a_type() + " with " + key.a_type());
  }
  if (!key.is_string())
    fail(std::string("cannot index ") + (obj.is_undefined() ? "an undefined value" : std::string("") + obj.a_type()) +
         " with " + key.a_type());
  return Value();
}

Value Interpreter::eval_slice(const Node& n, Scope* s) {
  const Value obj = eval(*n.a, s);
  if (!obj.is_array() && !obj.is_string()) fail(std::string("cannot slice ") + obj.a_type());
  Value parts[3];
  for (int i = 0; i < 3; ++i) {
    if (!n.items[size_t(i)]) continue;
    parts[i] = eval(*n.items[size_t(i)], s);
    if (!parts[i].is_int() && !parts[i].is_undefined())
      fail(std::string("slice bounds must be integers, not ") + parts[i].a_type());
  }
  if (obj.is_array()) {
    std::vector<Value> out;
    for (size_t i : slice_indices(obj.items().size(), parts[0], parts[1], parts[2])) out.push_back(obj.items()[i]);
    return Value::array(std::move(out));
  }
  const std::vector<Value> cps = code_point_values(obj.str());
  std::string out;
  for (size_t i : slice_indices(cps.size(), parts[0], parts[1], parts[2])) out += cps[i].str();
  return Value::string(std::move(out));
}

CallArgs Interpreter::eval_args(const NodeList& args, Scope* s) {
  CallArgs out;
  for (const NodePtr& a : args) {
    if (a->kind == NodeKind::kSpread) {
      const Value v = eval(*a->a, s);
      if (!v.is_array()) throw TemplateError(std::string("cannot unpack ") + v.a_type() + " with '*'", a->pos);
      out.pos.insert(out.pos.end(), v.items().begin(), v.items().end());
    } else if (a->kind != NodeKind::kKeyword && a->kind != NodeKind::kKeywordSpread) {
      out.pos.push_back(eval(*a, s));
    }
  }
  auto add = [&](const std::string& k, Value v, SourcePos pos) {
    if (out.kwarg(k)) throw TemplateError("keyword argument '" + k + "' given twice", pos);
    out.kw.emplace_back(k, std::move(v));
  };
  for (const NodePtr& a : args) {
    if (a->kind == NodeKind::kKeyword) {
      add(a->name, eval(*a->a, s), a->pos);
    } else if (a->kind == NodeKind::kKeywordSpread) {
      const Value v = eval(*a->a, s);
      if (!v.is_mapping()) throw TemplateError(std::string("'**' needs a dict, not ") + v.a_type(), a->pos);
      for (const auto& [k, e] : v.obj().entries) add(k, e, a->pos);
    }
  }
  return out;
}

const Interpreter::Specials& Interpreter::specials_of(const Node& n) {
  auto it = specials_.find(&n);
  if (it != specials_.end()) return it->second;
  Specials sp;
  for (const NodePtr& c : n.body) collect_specials(c.get(), sp.caller, sp.varargs, sp.kwargs);
  return specials_.emplace(&n, sp).first->second;
}

void Interpreter::bind_arguments(const std::string& display_name, const NodeList& params, const Specials& sp,
                                 CallArgs args, Scope* scope) {
  std::vector<const Node*> pending;
  for (size_t i = 0; i < params.size(); ++i) {
    const Node& p = *params[i];
    Value v;
    bool given = false;
    if (i < args.pos.size()) {
      v = args.pos[i];
      given = true;
    } else {
      for (auto it = args.kw.begin(); it != args.kw.end(); ++it)
        if (it->first == p.name) {
          v = std::move(it->second);
          args.kw.erase(it);
          given = true;
          break;
        }
    }
    if (!given && p.kind == NodeKind::kKeyword) pending.push_back(&p);
    scope->set(p.name, std::move(v));
  }
  if (sp.kwargs) {
    Value kw = Value::object();
    for (auto& [k, v] : args.kw) kw.obj().set(k, v);
    scope->set("kwargs", std::move(kw));
  } else if (!args.kw.empty()) {
    fail("macro " + display_name + " takes no keyword argument '" + args.kw.front().first + "'");
  }
  if (sp.varargs) {
    std::vector<Value> extra;
    for (size_t i = params.size(); i < args.pos.size(); ++i) extra.push_back(args.pos[i]);
    scope->set("varargs", Value::array(std::move(extra)));
  } else if (args.pos.size() > params.size()) {
    fail("macro " + display_name + " takes at most " + std::to_string(params.size()) + " argument(s), got " +
         std::to_string(args.pos.size()));
  }
  for (const Node* p : pending) scope->set(p->name, eval(*p->a, scope));
}

Value Interpreter::call(const Value& fn, CallArgs args, Scope* call_site) {
  const FunctionData& f = *fn.fn();
  if (f.kind == FunctionData::Kind::kNative) return f.native(args);
  DepthGuard guard(call_depth_, kMaxCallDepth, "macro calls");
  const Node& node = *f.node;
  const Specials& sp = specials_of(node);
  Scope* parent = f.scope;
  if (f.kind == FunctionData::Kind::kMacro && sp.caller) {
    // `caller` is what the {% call %} block at the call site passed, else undefined.
    parent = new_scope(f.scope);
    const Value* caller = call_site && call_site->call_block ? call_site->find("caller") : nullptr;
    parent->set("caller", caller ? *caller : Value());
  }
  Scope* scope = new_scope(parent);
  bind_arguments(f.kind == FunctionData::Kind::kMacro ? "'" + f.name + "'" : "caller", node.params, sp, std::move(args),
                 scope);
  return Value::string(render_to_string(node.body, scope));
}

}  // namespace strata::jinja

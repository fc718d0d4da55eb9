// Evaluates a parsed template against variables, with @huggingface/jinja's semantics: scopes
// (a for loop's body has its own; if does not; a macro sees where it was defined), the loop
// variable, macros with caller/varargs/kwargs, call and filter blocks, and output of values as
// the reference prints them. One Interpreter renders once; it owns every scope and namespace
// made during the render and releases them together.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/jinja/ast.h"
#include "text/jinja/value.h"

namespace strata::jinja {

struct Scope {
  Scope* parent = nullptr;
  std::unordered_map<std::string, Value> vars;
  bool call_block = false;  // made by {% call %}: holds the `caller` the called macro sees

  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value v) { vars[name] = std::move(v); }
};

class Interpreter {
 public:
  explicit Interpreter(uint64_t max_steps);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // `variables` must be a JSON object; its keys become global names (a key that is a builtin
  // name, such as `range` or `none`, is an error).
  std::string render(const Node& root, const nlohmann::ordered_json& variables);

  // namespace(...): a new namespace, held until the render ends.
  Value make_namespace();

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  struct Specials {
    bool caller = false, varargs = false, kwargs = false;
  };

  Scope* new_scope(Scope* parent);
  void count_step(uint64_t n = 1);
  void charge(const Value& v);

  Flow render_block(const NodeList& body, Scope* s, std::string& out);
  Flow render_statement(const Node& n, Scope* s, std::string& out);
  void render_for(const Node& n, Scope* s, std::string& out);
  void execute_set(const Node& n, Scope* s);
  std::string render_to_string(const NodeList& body, Scope* s);

  Value eval(const Node& n, Scope* s);
  Value eval_node(const Node& n, Scope* s);
  Value eval_binary(const Node& n, Scope* s);
  Value eval_member(const Value& obj, const Value& key);
  Value eval_slice(const Node& n, Scope* s);
  CallArgs eval_args(const NodeList& args, Scope* s);
  Value eval_filter(const Node& filter, Value operand, Scope* s);

  Value call(const Value& fn, CallArgs args, Scope* call_site);
  void bind_arguments(const std::string& display_name, const NodeList& params, const Specials& sp, CallArgs args,
                      Scope* scope);
  const Specials& specials_of(const Node& n);

  uint64_t max_steps_;
  uint64_t steps_ = 0;
  int depth_ = 0;
  int call_depth_ = 0;
  std::deque<Scope> scopes_;
  std::vector<std::shared_ptr<ObjectData>> namespaces_;
  std::map<const Node*, Specials> specials_;
};

}  // namespace strata::jinja

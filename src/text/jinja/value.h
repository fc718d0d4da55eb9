// Runtime values of the Jinja interpreter. They follow @huggingface/jinja's value model: numbers
// are doubles tagged integer or float, lists and dicts are shared by reference (a namespace
// assigned through one name changes for all), dicts keep insertion order, and `undefined` is a
// value of its own.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::jinja {

class Value;
class Interpreter;
struct Node;
struct Scope;

struct ArrayData {
  std::vector<Value> items;
  bool tuple = false;
  int depth = 1;  // levels of nested lists and dicts, this one included
};

// An insertion-ordered string-keyed map. kDict is a mapping (JSON object, dict literal, macro
// kwargs, the loop variable); kNamespace is namespace(): attribute access and assignment only.
struct ObjectData {
  enum class Kind { kDict, kNamespace };
  Kind kind = Kind::kDict;
  std::vector<std::pair<std::string, Value>> entries;
  int depth = 1;

  const Value* find(std::string_view key) const;
  void set(std::string key, Value v);
};

// Positional arguments, then keyword arguments in the order written.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;

  const Value* kwarg(std::string_view name) const;
  // Positional argument i, else keyword `name`, else nullptr.
  const Value* arg(size_t i, std::string_view name) const;
};

using NativeFunction = std::function<Value(const CallArgs&)>;

// A callable: a native builtin, a macro, or the `caller` of a {% call %} block.
struct FunctionData {
  enum class Kind { kNative, kMacro, kCaller };
  Kind kind = Kind::kNative;
  std::string name;
  NativeFunction native;
  const Node* node = nullptr;  // the macro or call statement
  Scope* scope = nullptr;      // where it was defined
};

class Value {
 public:
  enum class Type { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kFunction };

  Value() = default;
  static Value none() { return Value(Type::kNone); }
  static Value boolean(bool b);
  static Value integer(double v);
  static Value floating(double v);
  static Value number(double v, bool is_float) { return is_float ? floating(v) : integer(v); }
  static Value string(std::string s);
  static Value array(std::vector<Value> items = {}, bool tuple = false);
  static Value object(ObjectData::Kind kind = ObjectData::Kind::kDict);
  static Value function(std::string name, NativeFunction fn);
  static Value function(std::shared_ptr<FunctionData> fn);
  // JSON to values: integers and floats become numbers as JavaScript reads them (doubles).
  static Value from_json(const nlohmann::ordered_json& j);

  Type type() const { return type_; }
  bool is_undefined() const { return type_ == Type::kUndefined; }
  bool is_none() const { return type_ == Type::kNone; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_int() const { return type_ == Type::kInt; }
  bool is_float() const { return type_ == Type::kFloat; }
  bool is_number() const { return type_ == Type::kInt || type_ == Type::kFloat; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_tuple() const { return type_ == Type::kArray && arr().tuple; }
  bool is_object() const { return type_ == Type::kObject; }
  // A mapping (dict); a namespace is an object but not a mapping.
  bool is_mapping() const { return type_ == Type::kObject && obj().kind != ObjectData::Kind::kNamespace; }
  bool is_namespace() const { return type_ == Type::kObject && obj().kind == ObjectData::Kind::kNamespace; }
  bool is_function() const { return type_ == Type::kFunction; }

  bool as_bool() const { return b_; }
  double num() const { return num_; }
  const std::string& str() const { return *static_cast<const std::string*>(ptr_.get()); }
  std::vector<Value>& items() const { return arr().items; }
  ObjectData& obj() const { return *static_cast<ObjectData*>(ptr_.get()); }
  std::shared_ptr<ObjectData> object_ptr() const { return std::static_pointer_cast<ObjectData>(ptr_); }
  FunctionData* fn() const { return static_cast<FunctionData*>(ptr_.get()); }

  // Python truthiness as the reference applies it (a namespace is always true).
  bool truthy() const;
  // Nesting of lists and dicts, bounded (kMaxValueDepth) so that neither printing nor releasing
  // a value can recurse without limit.
  int depth() const;
  // Whether two values are the same list, dict or function object.
  bool same_object(const Value& o) const;

  // Name of the type in messages ("string", "list", "undefined", ...), and with an article
  // ("a string", "an integer", "an undefined value", "none").
  const char* type_name() const;
  std::string a_type() const;

 private:
  explicit Value(Type t) : type_(t) {}
  ArrayData& arr() const { return *static_cast<ArrayData*>(ptr_.get()); }

  // Strings, lists, dicts and functions are shared, not copied, when a value is copied (a
  // long message content is read many times in a render). Strings are immutable; lists and
  // dicts are once built, except namespaces.
  Type type_ = Type::kUndefined;
  bool b_ = false;
  double num_ = 0;
  std::shared_ptr<void> ptr_;
};

// How {{ value }} prints (none and undefined print nothing; the caller skips them): floats as
// "2.0", booleans "true"/"false", lists and dicts as JSON with ", " and ": ".
std::string display_string(const Value& v);
// The string JavaScript makes of the underlying value, which `~` and string `+` concatenate:
// floats as "2", lists as their items' display strings joined by ",", dicts "[object Map]".
std::string raw_string(const Value& v);

// `==` of the reference (JavaScript's loose equality on the underlying values).
bool loose_equals(const Value& a, const Value& b);
// `in` on a list and the unique filter compare with JavaScript's strict equality.
bool strict_equals(const Value& a, const Value& b);

struct JsonOptions {
  int indent = 0;  // 0: one line
  bool ensure_ascii = false;
  bool sort_keys = false;
  bool custom_separators = false;
  std::string item_separator, key_separator;
};
// The reference's tojson. `undefined_as_null` false prints undefined as `undefined` (as
// printing a list does). Throws Error for functions.
void to_json(const Value& v, const JsonOptions& o, bool undefined_as_null, std::string& out, int depth = 0);

}  // namespace strata::jinja

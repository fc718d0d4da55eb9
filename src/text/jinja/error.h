// Errors of the Jinja interpreter: a one-line message and the line and column of the construct
// at fault, formatted as "jinja: <message> (line L, column C)".
#pragma once
#include <string>

#include "core/error.h"

namespace strata::jinja {

struct SourcePos {
  int line = 0;    // 1-based; 0 when not known yet
  int column = 0;  // 1-based, in characters
};

class TemplateError : public Error {
 public:
  explicit TemplateError(std::string message, SourcePos pos = {});
  const std::string& message() const { return message_; }
  SourcePos pos() const { return pos_; }
  bool located() const { return pos_.line > 0; }

 private:
  std::string message_;
  SourcePos pos_;
};

// Throws a TemplateError that the evaluator locates at the node being evaluated.
[[noreturn]] void fail(std::string message);

}  // namespace strata::jinja

#include "text/jinja/error.h"

namespace strata::jinja {
namespace {

std::string format(const std::string& message, SourcePos pos) {
  std::string s = "jinja: " + message;
  if (pos.line > 0) s += " (line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column) + ")";
  return s;
}

}  // namespace

TemplateError::TemplateError(std::string message, SourcePos pos)
    : Error(format(message, pos)), message_(std::move(message)), pos_(pos) {}

void fail(std::string message) { throw TemplateError(std::move(message)); }

}  // namespace strata::jinja

#include "text/jinja/template.h"

#include "text/jinja/ast.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/parser.h"

namespace strata::jinja {

Template::Template(std::string_view source) : root_(parse_template(source)) {}
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;
Template::~Template() = default;

std::string Template::render(const nlohmann::ordered_json& variables, uint64_t max_steps) const {
  Interpreter interp(max_steps);
  return interp.render(*root_, variables);
}

}  // namespace strata::jinja

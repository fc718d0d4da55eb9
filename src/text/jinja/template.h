// strata's Jinja interpreter for chat templates, compatible with @huggingface/jinja (the
// implementation transformers.js uses) and rendering with Hugging Face's settings (trim_blocks
// and lstrip_blocks on). docs/chat-formats.md lists what it covers and where it follows Jinja2
// instead of the reference.
//
//   jinja::Template t(source);                  // parses; throws strata::Error on bad syntax
//   std::string s = t.render({{"messages", ...}, {"add_generation_prompt", true}});
//
// Errors are strata::Error (jinja::TemplateError) with one line naming the construct and its
// line and column. Rendering is bounded in depth, steps and output size (limits.h), so a
// hostile template fails with an error instead of hanging or exhausting the stack. A Template
// is immutable after construction: render() may run on several threads at once.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "text/jinja/limits.h"

namespace strata::jinja {

struct Node;

class Template {
 public:
  explicit Template(std::string_view source);
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;
  ~Template();

  // `variables`: a JSON object whose keys are the template's global names.
  std::string render(const nlohmann::ordered_json& variables, uint64_t max_steps = kMaxSteps) const;

 private:
  std::unique_ptr<Node> root_;
};

}  // namespace strata::jinja

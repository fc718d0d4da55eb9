// The source transformations @huggingface/jinja applies before tokenizing, with Hugging Face's
// settings (trim_blocks and lstrip_blocks on, as transformers renders chat templates):
//  - one trailing newline of the template is dropped;
//  - lstrip_blocks: spaces and tabs from a line start up to "{%", "{#" or "{-" are removed;
//  - trim_blocks: a newline right after "%}", "#}" or "-}" is removed;
//  - transformers' {% generation %} / {% endgeneration %} markers are removed, honouring their
//    whitespace control.
// Like the reference, these are textual: they also apply inside string literals.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::jinja {

struct MappedText {
  std::string text;
  std::vector<uint32_t> origin;  // source byte offset of each byte of text
};

MappedText preprocess(std::string_view source);

}  // namespace strata::jinja

// The small files make-model writes beside a checkpoint's tensors: JSON configs and the
// tokenizer files copied from a tokenizer folder.
#pragma once
#include <string>

namespace strata::models {

// Writes text to path; throws Error when it cannot.
void write_text_file(const std::string& path, const std::string& text);
// Copies tokenizer.json and tokenizer_config.json from `from_dir` into `to_dir`, writable
// (the source may be read-only). Throws Error naming a missing file.
void copy_tokenizer_files(const std::string& from_dir, const std::string& to_dir);

}  // namespace strata::models

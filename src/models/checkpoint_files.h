// The small files make-model writes beside a checkpoint's tensors: JSON configs and the
// tokenizer files copied from a tokenizer folder.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace strata::models {

// Writes text to path; throws Error when it cannot.
void write_text_file(const std::string& path, const std::string& text);
// Copies tokenizer.json and tokenizer_config.json from `from_dir` into `to_dir`, writable
// (the source may be read-only). Throws Error naming a missing file.
void copy_tokenizer_files(const std::string& from_dir, const std::string& to_dir);

// One tensor of a checkpoint to write: fill produces its bytes when its turn comes.
struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::function<void(uint8_t* dst, uint64_t nbytes)> fill;
  uint64_t bytes() const;
};

// Writes the tensors in order into model-0000i-of-0000n.safetensors shards of about
// shard_bytes (0: 256 MiB under 4 GiB in all, else 2 GiB) and model.safetensors.index.json.
// The caller orders tensors so that each starts aligned to its element size (wider dtypes
// first). progress(done, total) after each tensor.
void write_sharded_checkpoint(const std::string& out_dir, const std::vector<TensorToWrite>& tensors, uint64_t shard_bytes,
                              const std::function<void(uint64_t, uint64_t)>& progress);

}  // namespace strata::models

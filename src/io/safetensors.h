// Safetensors checkpoints: one file or many shards listed by model.safetensors.index.json.
// Files are memory-mapped; opening validates every header strictly and reads no tensor data,
// so a checkpoint of any size opens in milliseconds.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"

namespace strata {

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // absolute byte offset in its file
  uint64_t nbytes = 0;
  int shard = 0;        // index into SafetensorsCheckpoint::files()

  int64_t numel() const;
  std::string shape_str() const;  // "[a, b]"
};

// A tensor's metadata plus a pointer into the mapped file.
struct TensorRef {
  const TensorInfo* info = nullptr;
  const uint8_t* data = nullptr;
  template <class T> const T* as() const { return reinterpret_cast<const T*>(data); }
};

// A .safetensors file's header, validated: header length sane, JSON well formed, known dtypes,
// shapes non-negative, data_offsets in bounds, sizes = numel × dtype size, no overlaps,
// no duplicate names. `bytes` is the whole file (fsize bytes); offsets are absolute. Throws
// Error naming `path` and the tensor.
struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
};
SafetensorsHeader parse_safetensors(const uint8_t* bytes, uint64_t fsize, const std::string& path, int shard_index = 0);

// One .safetensors file, mapped and validated by parse_safetensors.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path, int shard_index = 0);

  const std::string& path() const { return file_.path(); }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const MappedFile& mapped() const { return file_; }

 private:
  MappedFile file_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

class SafetensorsCheckpoint {
 public:
  // dir holds model.safetensors.index.json (sharded) or a single model.safetensors.
  static SafetensorsCheckpoint open_dir(const std::string& dir);
  // One file on its own.
  static SafetensorsCheckpoint open_file(const std::string& path);

  const TensorInfo* find(const std::string& name) const;
  // Throws Error naming the tensor if it is absent.
  TensorRef get(const std::string& name) const;
  TensorRef ref(const TensorInfo& info) const;
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  std::vector<const TensorInfo*> all() const;  // sorted by name
  size_t size() const { return by_name_.size(); }
  uint64_t total_bytes() const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unordered_map<std::string, const TensorInfo*> by_name_;
};

}  // namespace strata

// Streaming safetensors writer: the header (names, dtypes, shapes) is declared first, then
// each tensor's bytes are produced one at a time, so a checkpoint far larger than memory can
// be written with one tensor in RAM.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace strata {

class SafetensorsWriter {
 public:
  using Fill = std::function<void(uint8_t* dst, uint64_t nbytes)>;

  explicit SafetensorsWriter(std::string path) : path_(std::move(path)) {}

  // Declares a tensor; fill writes exactly numel × dtype size bytes when its turn comes.
  void add(std::string name, DType dtype, std::vector<int64_t> shape, Fill fill);
  void set_metadata(std::string key, std::string value) { metadata_[std::move(key)] = std::move(value); }
  uint64_t data_bytes() const { return data_bytes_; }
  const std::vector<std::string>& names() const { return names_; }

  // Writes header and all tensors in declaration order; throws Error on I/O failure.
  void write();

 private:
  struct Entry {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t begin, end;
    Fill fill;
  };
  std::string path_;
  std::vector<Entry> entries_;
  std::vector<std::string> names_;
  std::map<std::string, std::string> metadata_;
  uint64_t data_bytes_ = 0;
};

}  // namespace strata

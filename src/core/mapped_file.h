// A read-only memory map of a whole file. Nothing is read until a page is touched.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace strata {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws Error naming the path if the file cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Ask the kernel to read a byte range ahead (MADV_WILLNEED); a hint, never an error.
  void prefetch(size_t offset, size_t length) const;
  // Reads every page in and pins it in memory (mlock): no page of the file is ever faulted in
  // again or evicted. Throws Error naming the path and the limit when the kernel refuses
  // (RLIMIT_MEMLOCK, `ulimit -l`).
  void lock() const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace strata

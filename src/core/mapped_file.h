// A read-only memory map of a whole file. Nothing is read until a page is touched.
//
// The map starts on a 2 MB boundary and asks for transparent huge pages (MADV_HUGEPAGE): where
// the page cache holds the file in 2 MB folios (ext4 and others on current kernels), each is
// mapped by one page-table entry instead of 512. A decode step reads ~1.5 GB of weights, much of
// it as randomly chosen experts; in 4 KB pages every 4 KB of an expert cost a page walk that
// missed the caches (flash-2l: FP4 expert products 3.7x slower than from 2 MB pages).
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

  // Reads every page of [offset, offset + length) in and maps it (MADV_POPULATE_READ, or one read
  // per page where the kernel lacks it); a hint, never an error.
  void populate(size_t offset, size_t length) const;
  // Bytes of this map that the kernel maps with 2 MB page-table entries right now.
  size_t huge_mapped_bytes() const;
  // Bytes that 2 MB entries could map: the whole 2 MB pages inside the file.
  size_t huge_mappable_bytes() const { return size_ / kHugePage * kHugePage; }
  // Drops this map's pages and, where no other process maps them, the file's cached pages, so
  // that populate() reads it again through this map, whose huge-page hint makes the kernel
  // cache it in 2 MB folios. A page cache filled by plain reads holds files in smaller folios,
  // which stay small for as long as they are cached. Costs one read of the file from disk.
  void recache_in_huge_pages() const;

  static constexpr size_t kHugePage = size_t(2) << 20;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace strata

#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "core/process_stats.h"

namespace strata {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw Error(path + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file");
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    // Reserve 2 MB more than the file, then map the file at the first 2 MB boundary inside:
    // file offset 0 on a 2 MB address is what lets a 2 MB folio be mapped by one entry.
    const size_t span = size_ + kHugePage;
    void* r = ::mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void* p = MAP_FAILED;
    int e = errno;
    if (r != MAP_FAILED) {
      const uintptr_t base = reinterpret_cast<uintptr_t>(r);
      const uintptr_t at = (base + kHugePage - 1) / kHugePage * kHugePage;
      p = ::mmap(reinterpret_cast<void*>(at), size_, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
      if (p == MAP_FAILED) {
        e = errno;
        ::munmap(r, span);
      } else {  // give back the reservation around the map
        if (at > base) ::munmap(r, at - base);
        const size_t page = size_t(::sysconf(_SC_PAGESIZE));
        const uintptr_t end = at + (size_ + page - 1) / page * page;
        if (base + span > end) ::munmap(reinterpret_cast<void*>(end), base + span - end);
      }
    }
    if (p == MAP_FAILED) {
      ::close(fd);
      throw Error(path + ": cannot mmap: " + std::strerror(e));
    }
#ifdef MADV_HUGEPAGE
    ::madvise(p, size_, MADV_HUGEPAGE);  // a hint: granted where the kernel and filesystem allow
#endif
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)), data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    path_ = std::move(o.path_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void MappedFile::prefetch(size_t offset, size_t length) const {
  if (!data_ || offset >= size_) return;
  long page = ::sysconf(_SC_PAGESIZE);
  size_t start = offset / size_t(page) * size_t(page);
  size_t end = std::min(size_, offset + length);
  ::madvise(const_cast<uint8_t*>(data_) + start, end - start, MADV_WILLNEED);
}

void MappedFile::populate(size_t offset, size_t length) const {
  if (!data_ || offset >= size_) return;
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  const size_t start = offset / page * page, end = std::min(size_, offset + length);
  uint8_t* p = const_cast<uint8_t*>(data_);
#ifdef MADV_POPULATE_READ
  if (::madvise(p + start, end - start, MADV_POPULATE_READ) == 0) return;
#endif
  // Kernels before 5.14: read ahead, then touch one byte per page.
  prefetch(start, end - start);
  volatile uint8_t sink = 0;
  uint8_t acc = 0;
  for (size_t i = start; i < end; i += page) acc ^= data_[i];
  sink = acc;
  (void)sink;
}

size_t MappedFile::huge_mapped_bytes() const {
  return data_ ? size_t(std::max<int64_t>(0, mapping_pmd_bytes(data_))) : 0;
}

void MappedFile::recache_in_huge_pages() const {
  if (!data_) return;
  ::madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED);  // this map's entries only
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // clean, unmapped cached pages only
  ::close(fd);
}

void MappedFile::lock() const {
  if (!data_ || size_ == 0) return;
  if (::mlock(data_, size_) != 0) {
    const int e = errno;
    throw Error("cannot lock " + path_ + " in memory (" + std::to_string(size_ >> 20) + " MiB): " + std::strerror(e) +
                (e == ENOMEM || e == EPERM ? " — raise the locked-memory limit (ulimit -l)" : ""));
  }
}

}  // namespace strata

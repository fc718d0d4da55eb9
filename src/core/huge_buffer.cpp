#include "core/huge_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <string>

#include "core/error.h"

namespace strata {

HugeBytes::HugeBytes(size_t bytes) : n_(bytes) {
  if (bytes == 0) return;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw Error("cannot map " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
#ifdef MADV_HUGEPAGE
  ::madvise(p, bytes, MADV_HUGEPAGE);  // a hint: granted where transparent huge pages allow
#endif
  p_ = p;
}

HugeBytes::~HugeBytes() {
  if (p_) ::munmap(p_, n_);
}

}  // namespace strata

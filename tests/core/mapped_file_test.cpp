// MappedFile's placement, prefetch, populate, lock and re-caching in huge pages, and the process
// statistics start-up reports.
#include "core/mapped_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "core/process_stats.h"

namespace strata {
namespace {

std::string temp_file(size_t bytes) {
  const std::string path = std::filesystem::temp_directory_path() / ("strata_mapped_" + std::to_string(::getpid()));
  std::ofstream f(path, std::ios::binary);
  std::vector<char> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = char(i * 31);
  f.write(data.data(), std::streamsize(bytes));
  return path;
}

TEST(MappedFile, LockReadsAndPinsTheWholeFile) {
  const std::string path = temp_file(size_t(1) << 20);
  {
    MappedFile m(path);
    rlimit lim{};
    ASSERT_EQ(::getrlimit(RLIMIT_MEMLOCK, &lim), 0);
    if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < m.size()) {
      EXPECT_THROW(m.lock(), Error);  // refused with a clear error, nothing else changes
    } else {
      m.lock();
      // every page is resident now: reading takes no fault
      const ProcessStats before = process_stats();
      unsigned sum = 0;
      for (size_t i = 0; i < m.size(); i += 4096) sum += m.data()[i];
      EXPECT_EQ(process_stats().major_faults, before.major_faults);
      EXPECT_EQ(m.data()[12345], uint8_t(12345 * 31));
      (void)sum;
    }
    m.prefetch(0, m.size());  // a hint: never throws
    m.prefetch(m.size() + 10, 5);
  }
  std::filesystem::remove(path);
}

TEST(MappedFile, MapsOnA2MBBoundaryAndRecachesWithoutChangingABit) {
  const size_t bytes = (size_t(6) << 20) + 12345;  // three whole 2 MB pages and a tail
  const std::string path = temp_file(bytes);
  {
    MappedFile m(path);
    ASSERT_EQ(m.size(), bytes);
    // offset 0 on a 2 MB address: the condition for mapping a 2 MB folio with one entry
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % MappedFile::kHugePage, 0u);
    EXPECT_EQ(m.huge_mappable_bytes(), size_t(6) << 20);
    m.populate(0, m.size());
    EXPECT_LE(m.huge_mapped_bytes(), m.huge_mappable_bytes());
    m.recache_in_huge_pages();
    m.populate(0, m.size());
    const size_t huge = m.huge_mapped_bytes();
    EXPECT_LE(huge, m.huge_mappable_bytes());
    EXPECT_EQ(huge % MappedFile::kHugePage, 0u);
    // what the kernel granted depends on it and the filesystem; the bytes never change
    RecordProperty("huge_mapped_bytes", std::to_string(huge));
    for (size_t i = 0; i < bytes; i += 4099) ASSERT_EQ(m.data()[i], uint8_t(i * 31)) << i;
    EXPECT_EQ(m.data()[bytes - 1], uint8_t((bytes - 1) * 31));
    m.populate(m.size() + 1, 10);  // out of range: a hint, ignored
  }
  std::filesystem::remove(path);
}

TEST(ProcessStats, MappingPmdBytesNamesOnlyAMappingStart) {
  std::vector<char> v(100);
  EXPECT_EQ(mapping_pmd_bytes(v.data() + 1), -1);  // inside the heap, not a mapping's start
  const std::string path = temp_file(size_t(1) << 20);
  {
    MappedFile m(path);
    EXPECT_EQ(mapping_pmd_bytes(m.data()), 0);  // a 1 MB file has no whole 2 MB page
  }
  std::filesystem::remove(path);
}

TEST(ProcessStats, CountsResidentMemoryAndFaults) {
  const ProcessStats a = process_stats();
  EXPECT_GT(a.resident_bytes, 0);
  std::vector<char> fresh(size_t(64) << 20);
  for (size_t i = 0; i < fresh.size(); i += 4096) fresh[i] = char(i);
  const ProcessStats b = process_stats();
  EXPECT_GT(b.minor_faults, a.minor_faults);  // 64 MiB of new pages were touched
  EXPECT_GT(b.resident_bytes, a.resident_bytes);
  EXPECT_GE(b.major_faults, a.major_faults);
}

}  // namespace
}  // namespace strata

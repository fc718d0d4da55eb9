// MappedFile's prefetch and lock, and the process statistics start-up reports.
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

// Strict validation of safetensors files: each corruption gives an Error naming the file and
// the tensor, never a crash.
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "io/safetensors_writer.h"

namespace strata {
namespace {
namespace fs = std::filesystem;

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata_st_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& n) const { return (dir_ / n).string(); }

  // A raw file from a header string and a data size.
  std::string raw(const std::string& name, const std::string& header, size_t data_bytes, int64_t len_override = -1) {
    std::string p = path(name);
    std::ofstream f(p, std::ios::binary);
    uint64_t len = len_override >= 0 ? uint64_t(len_override) : header.size();
    for (int i = 0; i < 8; ++i) f.put(char(len >> (8 * i)));
    f << header << std::string(data_bytes, '\0');
    return p;
  }

  static std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(SafetensorsTest, WritesAndReadsBack) {
  SafetensorsWriter w(path("a.safetensors"));
  w.add("x", DType::F32, {2, 3}, [](uint8_t* d, uint64_t n) {
    float v[6] = {1, 2, 3, 4, 5, 6};
    std::memcpy(d, v, n);
  });
  w.add("y", DType::BF16, {4}, [](uint8_t* d, uint64_t n) { std::memset(d, 0x3F, n); });
  w.add("empty", DType::I64, {0, 5}, [](uint8_t*, uint64_t) {});
  w.set_metadata("format", "pt");
  w.write();
  auto c = SafetensorsCheckpoint::open_file(path("a.safetensors"));
  ASSERT_EQ(c.size(), 3u);
  auto x = c.get("x");
  EXPECT_EQ(x.info->dtype, DType::F32);
  EXPECT_EQ(x.info->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x.as<float>()[4], 5.0f);
  EXPECT_EQ(x.info->offset % 8, 0u);  // data aligned
  EXPECT_EQ(c.files()[0]->metadata().at("format"), "pt");
  EXPECT_EQ(c.get("empty").info->nbytes, 0u);
  EXPECT_NE(error_of([&] { c.get("nope"); }).find("nope"), std::string::npos);
}

TEST_F(SafetensorsTest, EveryDtypeParses) {
  for (const char* t : {"F32", "F16", "BF16", "F8_E4M3", "F8_E8M0", "I8", "U8", "I32", "I64", "BOOL"}) {
    auto dt = parse_dtype(t);
    ASSERT_TRUE(dt) << t;
    std::string h = std::string("{\"t\":{\"dtype\":\"") + t + "\",\"shape\":[3],\"data_offsets\":[0," +
                    std::to_string(3 * dtype_size(*dt)) + "]}}";
    auto c = SafetensorsCheckpoint::open_file(raw(std::string(t) + ".st", h, size_t(3 * dtype_size(*dt))));
    EXPECT_EQ(c.get("t").info->dtype, *dt);
  }
}

struct Bad {
  const char* what;
  std::string header;
  size_t data;
  int64_t len_override;
  const char* expect;  // substring of the message
};

TEST_F(SafetensorsTest, RejectsCorruptHeadersWithClearErrors) {
  const std::string ok_t = "\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}";
  const Bad cases[] = {
      {"header length beyond file", "{" + ok_t + "}", 16, 1 << 20, "header length"},
      {"header length zero", "{}", 0, 0, "header length"},
      {"not json", "{\"w\": [1, 2", 16, -1, "not valid JSON"},
      {"not an object", "[1,2,3]", 0, -1, "not a JSON object"},
      {"unknown dtype", "{\"w\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]}}", 1, -1, "unsupported dtype F4"},
      {"size mismatch", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,16]}}", 16, -1, "expected 24"},
      {"offsets past end", "{" + ok_t + "}", 8, -1, "truncated"},
      {"end before begin", "{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}", 16, -1, "end before"},
      {"negative dim", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0, -1, "bad dimension"},
      {"overlap", "{" + ok_t + ",\"v\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16, -1, "overlap"},
      {"duplicate name", "{" + ok_t + "," + ok_t + "}", 16, -1, "appears twice"},
      {"missing offsets", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, -1, "data_offsets"},
      {"huge shape", "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,16]}}", 16, -1, "absurdly"},
  };
  int i = 0;
  for (const auto& b : cases) {
    std::string p = raw("bad" + std::to_string(i++) + ".safetensors", b.header, b.data, b.len_override);
    std::string msg = error_of([&] { SafetensorsCheckpoint::open_file(p); });
    EXPECT_NE(msg.find(b.expect), std::string::npos) << b.what << ": " << msg;
    EXPECT_NE(msg.find(p), std::string::npos) << b.what << ": message must name the file: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line";
  }
}

TEST_F(SafetensorsTest, TruncatedFile) {
  std::string p = path("t.safetensors");
  std::ofstream(p, std::ios::binary) << "abc";
  EXPECT_NE(error_of([&] { SafetensorsCheckpoint::open_file(p); }).find("truncated"), std::string::npos);
  EXPECT_NE(error_of([&] { SafetensorsCheckpoint::open_file(path("absent.safetensors")); }).find("cannot open"),
            std::string::npos);
}

TEST_F(SafetensorsTest, ShardedThroughIndex) {
  for (int s = 0; s < 2; ++s) {
    SafetensorsWriter w(path("model-0000" + std::to_string(s + 1) + "-of-00002.safetensors"));
    w.add("t" + std::to_string(s), DType::U8, {4}, [s](uint8_t* d, uint64_t n) { std::memset(d, s + 1, n); });
    w.write();
  }
  std::ofstream(path("model.safetensors.index.json"))
      << R"({"metadata":{"total_size":8},"weight_map":{"t0":"model-00001-of-00002.safetensors","t1":"model-00002-of-00002.safetensors"}})";
  auto c = SafetensorsCheckpoint::open_dir(dir_.string());
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.get("t1").as<uint8_t>()[0], 2);
  EXPECT_EQ(c.total_bytes(), 8u);

  // a tensor the index places in the wrong shard
  std::ofstream(path("model.safetensors.index.json"))
      << R"({"weight_map":{"t0":"model-00002-of-00002.safetensors","t1":"model-00002-of-00002.safetensors"}})";
  std::string msg = error_of([&] { SafetensorsCheckpoint::open_dir(dir_.string()); });
  EXPECT_NE(msg.find("'t0'"), std::string::npos) << msg;

  // a missing shard
  std::ofstream(path("model.safetensors.index.json"))
      << R"({"weight_map":{"t0":"model-00001-of-00002.safetensors","t9":"model-00009-of-00009.safetensors"}})";
  msg = error_of([&] { SafetensorsCheckpoint::open_dir(dir_.string()); });
  EXPECT_NE(msg.find("model-00009-of-00009.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing"), std::string::npos) << msg;

  // an index that escapes the directory, and one that is not JSON
  std::ofstream(path("model.safetensors.index.json")) << R"({"weight_map":{"t0":"../x.safetensors"}})";
  EXPECT_NE(error_of([&] { SafetensorsCheckpoint::open_dir(dir_.string()); }).find("outside"), std::string::npos);
  std::ofstream(path("model.safetensors.index.json")) << "{";
  EXPECT_NE(error_of([&] { SafetensorsCheckpoint::open_dir(dir_.string()); }).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of([&] { SafetensorsCheckpoint::open_dir(path("nodir")); }).find("not a readable directory"),
            std::string::npos);
}

}  // namespace
}  // namespace strata

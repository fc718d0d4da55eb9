// .npy round trips for every supported type and strict rejection of malformed files.
#include "io/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace strata {
namespace {

std::string tmp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("strata_npy_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::vector<uint8_t> bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(Npy, RoundTripsEveryType) {
  const std::string p = tmp("rt.npy");
  std::vector<float> f = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, 7.0f};
  write_npy(p, {2, 3}, f.data());
  NpyArray a = read_npy(p);
  EXPECT_EQ(a.type, NpyType::f32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.to_f32(), f);
  auto b = bytes_of(p);
  EXPECT_EQ((b.size() - 6 * 4) % 64, 0u) << "header padded to 64 bytes";

  std::vector<int64_t> i64 = {-5, 1LL << 40, 3};
  write_npy(p, NpyType::i64, {3}, i64.data());
  EXPECT_EQ(read_npy(p).to_i64(), i64);
  std::vector<int32_t> i32 = {-7, 8};
  write_npy(p, NpyType::i32, {2, 1}, i32.data());
  EXPECT_EQ(read_npy(p).to_i64(), (std::vector<int64_t>{-7, 8}));
  std::vector<double> f64 = {0.1, -0.2};
  write_npy(p, NpyType::f64, {2}, f64.data());
  EXPECT_EQ(read_npy(p).to_f64(), f64);
  std::vector<uint8_t> u8 = {0, 255, 7};
  write_npy(p, NpyType::u8, {3}, u8.data());
  EXPECT_EQ(read_npy(p).to_i64(), (std::vector<int64_t>{0, 255, 7}));
  std::vector<uint16_t> u16 = {0x3F80, 0xFFFF};
  write_npy(p, NpyType::u16, {2}, u16.data());
  NpyArray u = read_npy(p);
  EXPECT_EQ(u.as<uint16_t>()[1], 0xFFFF);
  write_npy(p, NpyType::f32, {}, f.data());  // a scalar
  EXPECT_EQ(read_npy(p).numel(), 1);
  write_npy(p, NpyType::f32, {0, 4}, nullptr);
  EXPECT_EQ(read_npy(p).numel(), 0);
  std::remove(p.c_str());
}

NpyArray parse(const std::string& header, size_t data_bytes, int version = 1) {
  std::string h = header;
  const size_t pre = version == 1 ? 10 : 12;
  while ((pre + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::vector<uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', uint8_t(version), 0};
  b.push_back(uint8_t(h.size() & 0xFF));
  b.push_back(uint8_t(h.size() >> 8));
  if (version != 1) b.push_back(0), b.push_back(0);
  b.insert(b.end(), h.begin(), h.end());
  b.resize(b.size() + data_bytes, 0);
  return parse_npy(b.data(), b.size(), "test.npy");
}

TEST(Npy, ParsesWhatNumpyWrites) {
  EXPECT_EQ(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24).shape,
            (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(parse("{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }", 5).numel(), 5);
  EXPECT_EQ(parse("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", 8, 2).numel(), 1);
}

TEST(Npy, RejectsMalformedFiles) {
  EXPECT_THROW(parse("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8), Error);   // big-endian
  EXPECT_THROW(parse("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", 4), Error);   // f16 unsupported
  EXPECT_THROW(parse("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8), Error);    // Fortran order
  EXPECT_THROW(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8), Error);   // short data
  EXPECT_THROW(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 8), Error);   // trailing data
  EXPECT_THROW(parse("{'descr': '<f4', 'shape': (2,), }", 8), Error);                          // missing key
  EXPECT_THROW(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8), Error);  // negative dim
  EXPECT_THROW(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8), Error);
  EXPECT_THROW(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, 4), Error);  // version
  const uint8_t junk[12] = {'n', 'o', 't', ' ', 'n', 'p', 'y', 0, 0, 0, 0, 0};
  EXPECT_THROW(parse_npy(junk, sizeof junk, "junk"), Error);
  EXPECT_THROW(read_npy(tmp("does-not-exist.npy")), Error);
}

}  // namespace
}  // namespace strata

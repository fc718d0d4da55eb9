// The fast profile's linear layer (kernels/fast_linear.h) against the reference's goldens,
// tests/goldens/fast_linear/<case>/ (written by reference/make_fast_linear_goldens.py, whose
// docstring lists the files): the weight in its checkpoint encoding, the activation, and the
// outputs bit for bit. Checked on every ISA this CPU has (fast_linear_isa), for the whole batch,
// each row alone and the rows in reverse order (each output depends on its row and weight row
// only); the plain definition (fast_dot_reference) and the route choice (fast_row_is_bf16) on
// every element / row; and kernels::linear under the fast profile, activation quantization
// included, at the active ISA.
#include "kernels/fast_linear.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "core/numerics.h"
#include "kernels/linear.h"

namespace strata::kernels {
namespace {

const std::string kRoot = std::string(STRATA_SOURCE_DIR) + "/tests/goldens/fast_linear";

// A .npy file (little-endian, C order) as the goldens write them: descr and shape from the
// header, the raw bytes after it. (The kernels' tests link no io layer: a reader of our own.)
struct Npy {
  std::string descr;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  template <class T> const T* as() const { return reinterpret_cast<const T*>(data.data()); }
};

Npy read_npy_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (b.size() < 10 || std::memcmp(b.data(), "\x93NUMPY", 6) != 0) throw std::runtime_error(path + ": not a .npy file");
  size_t hlen, off;
  if (b[6] == 1) hlen = b[8] | (size_t(b[9]) << 8), off = 10;
  else hlen = b[8] | (size_t(b[9]) << 8) | (size_t(b[10]) << 16) | (size_t(b[11]) << 24), off = 12;
  const std::string h(reinterpret_cast<const char*>(b.data() + off), hlen);
  Npy a;
  const size_t d = h.find("'descr': '");
  a.descr = h.substr(d + 10, h.find('\'', d + 10) - d - 10);
  if (h.find("'fortran_order': False") == std::string::npos) throw std::runtime_error(path + ": fortran order");
  const size_t s = h.find('(', h.find("'shape'")), e = h.find(')', s);
  std::string dims = h.substr(s + 1, e - s - 1);
  for (size_t p = 0; p < dims.size();) {
    while (p < dims.size() && (dims[p] == ' ' || dims[p] == ',')) ++p;
    if (p >= dims.size()) break;
    size_t q = p;
    while (q < dims.size() && dims[q] >= '0' && dims[q] <= '9') ++q;
    a.shape.push_back(std::stoll(dims.substr(p, q - p)));
    p = q;
  }
  const int64_t size = a.descr == "<f4" ? 4 : a.descr == "<u2" ? 2 : (a.descr == "|u1" || a.descr == "u1") ? 1 : 0;
  if (size == 0) throw std::runtime_error(path + ": unexpected dtype " + a.descr);
  a.data.assign(b.begin() + std::ptrdiff_t(off + hlen), b.end());
  if (int64_t(a.data.size()) != a.numel() * size) throw std::runtime_error(path + ": size does not match the shape");
  return a;
}

struct Case {
  std::string name;
  nlohmann::json meta;
  std::map<std::string, Npy> files;
  LinearWeight w;
  int64_t rows = 0;
  std::vector<float> x, xq, y, y_bf16, y_exact;
  std::vector<uint8_t> route;
};

std::vector<float> floats(const Npy& a) { return std::vector<float>(a.as<float>(), a.as<float>() + a.numel()); }

Case load_case(const std::string& name) {
  Case c;
  c.name = name;
  const std::string dir = kRoot + "/" + name;
  std::ifstream mf(dir + "/meta.json");
  c.meta = nlohmann::json::parse(mf);
  for (auto& [role, info] : c.meta["files"].items()) c.files.emplace(role, read_npy_file(dir + "/" + role + ".npy"));
  const std::string fmt = c.meta["format"].get<std::string>();
  const int64_t out = c.meta["out"].get<int64_t>(), in = c.meta["in"].get<int64_t>();
  LinearWeight& w = c.w;
  w.out = out, w.in = in;
  w.data = c.files.at("w.weight").data.data();
  if (fmt == "fp8" || fmt == "fp4") w.scale = c.files.at("w.scale").data.data();
  w.format = fmt == "fp8" ? WeightFormat::fp8 : fmt == "fp4" ? WeightFormat::fp4 : fmt == "bf16" ? WeightFormat::bf16
                                                                                                 : WeightFormat::f32;
  w.act_quant = c.meta["act_quant"].get<bool>();
  c.rows = c.meta["rows"].get<int64_t>();
  c.x = floats(c.files.at("x"));
  c.xq = w.act_quant ? floats(c.files.at("x_quant")) : c.x;
  c.y = floats(c.files.at("y"));
  c.y_bf16 = floats(c.files.at("y_bf16"));
  c.y_exact = floats(c.files.at("y_exact"));
  const Npy& r = c.files.at("route");
  c.route.assign(r.as<uint8_t>(), r.as<uint8_t>() + r.numel());
  EXPECT_EQ(int64_t(c.x.size()), c.rows * in);
  EXPECT_EQ(int64_t(c.y.size()), c.rows * out);
  return c;
}

std::vector<std::string> case_names() {
  std::vector<std::string> v;
  if (!std::filesystem::exists(kRoot)) return v;
  for (const auto& e : std::filesystem::directory_iterator(kRoot))
    if (std::filesystem::exists(e.path() / "meta.json")) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<Isa> isas() {
  std::vector<Isa> v{Isa::scalar};
  for (Isa i : {Isa::avx2, Isa::avx512})
    if (int(i) <= int(detected_isa())) v.push_back(i);
  return v;
}

// Elements whose bits differ (NaN never expected: the goldens hold none), with the first one.
int64_t bit_diffs(const float* got, const float* want, int64_t n, int64_t out, std::string* first) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i])) continue;
    if (bad++ == 0 && first) {
      char s[160];
      std::snprintf(s, sizeof s, "row %lld, output %lld: got %a (0x%08x), want %a (0x%08x)", (long long)(i / out),
                    (long long)(i % out), double(got[i]), std::bit_cast<uint32_t>(got[i]), double(want[i]),
                    std::bit_cast<uint32_t>(want[i]));
      *first = s;
    }
  }
  return bad;
}

TEST(FastLinearGolden, AllCasesPresent) {
  const auto names = case_names();
  if (names.empty()) GTEST_SKIP() << "no goldens at " << kRoot;
  EXPECT_GE(names.size(), 12u);
  for (const auto& n : names) {
    const Case c = load_case(n);
    int64_t differ = 0;  // the golden tells fast from exact (diagnostic: the crafted cases may not)
    for (size_t i = 0; i < c.y.size(); ++i) differ += c.y[i] != c.y_exact[i];
    std::printf("[fast golden] %-22s %-4s rows %2lld out %3lld in %4lld act_quant %d: %lld of %zu outputs differ from "
                "the exact profile\n",
                n.c_str(), c.meta["format"].get<std::string>().c_str(), (long long)c.rows, (long long)c.w.out,
                (long long)c.w.in, int(c.w.act_quant), (long long)differ, c.y.size());
  }
}

TEST(FastLinearGolden, EveryIsaBitwise) {
  const auto names = case_names();
  if (names.empty()) GTEST_SKIP() << "no goldens at " << kRoot;
  for (const auto& n : names) {
    const Case c = load_case(n);
    const int64_t out = c.w.out, in = c.w.in, R = c.rows;
    for (Isa isa : isas()) {
      const std::string where = n + " @" + std::string(isa_name(isa));
      for (bool rb : {false, true}) {
        const std::vector<float>& want = rb ? c.y_bf16 : c.y;
        std::vector<float> y(size_t(R * out), std::nanf(""));
        std::string first;
        fast_linear_isa(isa, c.w, c.xq.data(), R, y.data(), rb);
        EXPECT_EQ(bit_diffs(y.data(), want.data(), R * out, out, &first), 0)
            << where << (rb ? " (bf16 outputs)" : "") << ", the whole batch: first " << first;
        // one row at a time
        for (int64_t r = 0; r < R; ++r) {
          std::vector<float> y1(size_t(out), std::nanf(""));
          fast_linear_isa(isa, c.w, c.xq.data() + r * in, 1, y1.data(), rb);
          EXPECT_EQ(bit_diffs(y1.data(), want.data() + r * out, out, out, &first), 0)
              << where << (rb ? " (bf16 outputs)" : "") << ", row " << r << " alone: " << first;
        }
        // the rows in reverse order
        std::vector<float> xr(size_t(R * in)), yr(size_t(R * out)), wr(size_t(R * out));
        for (int64_t r = 0; r < R; ++r) {
          std::copy_n(c.xq.data() + r * in, in, xr.data() + (R - 1 - r) * in);
          std::copy_n(want.data() + r * out, out, wr.data() + (R - 1 - r) * out);
        }
        fast_linear_isa(isa, c.w, xr.data(), R, yr.data(), rb);
        EXPECT_EQ(bit_diffs(yr.data(), wr.data(), R * out, out, &first), 0)
            << where << (rb ? " (bf16 outputs)" : "") << ", rows reversed: " << first;
      }
    }
  }
}

TEST(FastLinearGolden, PlainDefinitionAndRoutes) {
  const auto names = case_names();
  if (names.empty()) GTEST_SKIP() << "no goldens at " << kRoot;
  for (const auto& n : names) {
    const Case c = load_case(n);
    const int64_t out = c.w.out, in = c.w.in;
    for (int64_t r = 0; r < c.rows; ++r) {
      EXPECT_EQ(fast_row_is_bf16(c.w, c.xq.data() + r * in, in), c.route[size_t(r)] != 0) << n << " row " << r;
      int64_t bad = 0;
      for (int64_t o = 0; o < out; ++o) {
        const float v = fast_dot_reference(c.w, o, c.xq.data() + r * in);
        const float want = c.y[size_t(r * out + o)];
        if (std::bit_cast<uint32_t>(v) != std::bit_cast<uint32_t>(want) && bad++ == 0)
          ADD_FAILURE() << n << " fast_dot_reference row " << r << " output " << o << ": " << v << " (" << std::hexfloat
                        << v << "), want " << want << " (" << want << ")" << std::defaultfloat;
      }
      EXPECT_EQ(bad, 0) << n << " row " << r;
    }
  }
}

// decode_weight_bf16 against dequant_row: the exact value, in bf16, with magnitudes below 2^-126
// as zeros of their sign.
TEST(FastLinearGolden, DecodedWeights) {
  const auto names = case_names();
  if (names.empty()) GTEST_SKIP() << "no goldens at " << kRoot;
  for (const auto& n : names) {
    const Case c = load_case(n);
    if (c.w.format == WeightFormat::f32) continue;
    std::vector<float> v(size_t(c.w.in));
    // (room to a multiple of 32 columns: the implementation zero-fills the row's last pair group)
    std::vector<uint16_t> d(size_t((c.w.in + 31) / 32 * 32));
    int64_t flushed = 0, bad = 0;
    for (int64_t r = 0; r < c.w.out; ++r) {
      dequant_row(c.w, r, v.data());
      decode_weight_bf16(c.w, r, d.data());
      for (int64_t k = 0; k < c.w.in; ++k) {
        float want = v[size_t(k)];
        if (std::fabs(want) < 0x1p-126f) flushed += want != 0, want = std::copysign(0.0f, want);
        const uint32_t wb = std::bit_cast<uint32_t>(want);
        ASSERT_EQ(wb & 0xFFFFu, 0u) << n << ": weight " << r << "," << k << " is no bf16 value";
        bad += d[size_t(k)] != uint16_t(wb >> 16);
      }
    }
    EXPECT_EQ(bad, 0) << n;
    if (flushed) std::printf("[fast golden] %s: %lld weights below 2^-126 decode to zero\n", n.c_str(), (long long)flushed);
  }
}

// kernels::linear under the fast profile: the activation quantized first where the weight asks,
// then the product above (the active ISA).
TEST(FastLinearGolden, LinearUnderFastProfile) {
  const auto names = case_names();
  if (names.empty()) GTEST_SKIP() << "no goldens at " << kRoot;
  ScopedNumerics guard(Numerics::fast);
  for (const auto& n : names) {
    const Case c = load_case(n);
    const int64_t out = c.w.out, R = c.rows;
    for (bool rb : {false, true}) {
      std::vector<float> y(size_t(R * out));
      std::string first;
      linear(c.w, c.x.data(), R, y.data(), rb);
      EXPECT_EQ(bit_diffs(y.data(), (rb ? c.y_bf16 : c.y).data(), R * out, out, &first), 0)
          << n << " linear(" << (rb ? "bf16 outputs" : "fp32 outputs") << ") @" << isa_name(active_isa()) << ": "
          << first;
    }
  }
}

}  // namespace
}  // namespace strata::kernels

#include "kernels/linear_profile.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <tuple>

namespace strata::kernels {
namespace {

using Key = std::tuple<int, int64_t, int64_t, int64_t>;  // format, out, in, rows

struct Profile {
  std::atomic<bool> on{false};
  std::mutex mu;
  std::map<Key, LinearProfileEntry> entries;
  std::map<std::string, RegionProfileEntry> regions;
};
Profile& profile() {
  static Profile p;
  return p;
}

}  // namespace

double weight_bytes(const LinearWeight& w) {
  const double n = double(w.out) * double(w.in);
  switch (w.format) {
    case WeightFormat::f32: return 4 * n;
    case WeightFormat::bf16: return 2 * n;
    case WeightFormat::fp8: return n + double((w.out + 127) / 128) * double((w.in + 127) / 128);
    case WeightFormat::fp4: return n / 2 + n / 32;
  }
  return 0;
}

const char* format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::f32: return "f32";
    case WeightFormat::bf16: return "bf16";
    case WeightFormat::fp8: return "fp8";
    case WeightFormat::fp4: return "fp4";
  }
  return "?";
}

void linear_profile_start() {
  Profile& p = profile();
  std::lock_guard<std::mutex> g(p.mu);
  p.entries.clear();
  p.regions.clear();
  p.on.store(true, std::memory_order_relaxed);
}

std::vector<LinearProfileEntry> linear_profile_stop() {
  Profile& p = profile();
  std::lock_guard<std::mutex> g(p.mu);
  p.on.store(false, std::memory_order_relaxed);
  std::vector<LinearProfileEntry> out;
  for (const auto& [k, e] : p.entries) out.push_back(e);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  return out;
}

bool linear_profile_on() { return profile().on.load(std::memory_order_relaxed); }

void linear_profile_record(const LinearWeight& w, int64_t rows, double seconds) {
  Profile& p = profile();
  std::lock_guard<std::mutex> g(p.mu);
  if (!p.on.load(std::memory_order_relaxed)) return;
  LinearProfileEntry& e = p.entries[Key{int(w.format), w.out, w.in, rows}];
  e.format = w.format;
  e.out = w.out;
  e.in = w.in;
  e.rows = rows;
  e.calls += 1;
  e.seconds += seconds;
  e.weight_bytes = weight_bytes(w);
}

void region_profile_record(const char* name, double seconds) {
  Profile& p = profile();
  std::lock_guard<std::mutex> g(p.mu);
  if (!p.on.load(std::memory_order_relaxed)) return;
  RegionProfileEntry& e = p.regions[name];
  e.name = name;
  e.calls += 1;
  e.seconds += seconds;
}

std::vector<RegionProfileEntry> region_profile() {
  Profile& p = profile();
  std::lock_guard<std::mutex> g(p.mu);
  std::vector<RegionProfileEntry> out;
  for (const auto& [k, e] : p.regions) out.push_back(e);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  return out;
}

}  // namespace strata::kernels

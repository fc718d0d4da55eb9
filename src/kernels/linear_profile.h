// Opt-in accounting of kernels::linear calls by weight shape. `strata bench --profile` turns it
// on for the prefill and the decode steps and prints each shape's time per step with the weight bytes
// and multiply-adds it moved per second, so that the product that is off its bound is seen in
// place (bench/linear_bench measures one kernel alone, with nothing around it). Off, it costs a
// relaxed atomic load per call.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/linear.h"

namespace strata::kernels {

struct LinearProfileEntry {
  WeightFormat format = WeightFormat::bf16;
  int64_t out = 0, in = 0, rows = 0;
  int64_t calls = 0;
  // Time on the calling thread, summed over the calls: products that run side by side (MoE's
  // decode experts, one per thread) each count their own time, so shares can add up to more
  // than the wall time.
  double seconds = 0;
  double weight_bytes = 0;  // one call's weight and scale bytes
};

// Clears what was recorded and starts recording.
void linear_profile_start();
// Stops recording; the entries, most time first.
std::vector<LinearProfileEntry> linear_profile_stop();
bool linear_profile_on();
void linear_profile_record(const LinearWeight& w, int64_t rows, double seconds);

// Named stretches of a step that are not weight products (a sparse indexer's scan of its keys),
// recorded while the profile is on: time on the calling thread, summed over the calls.
struct RegionProfileEntry {
  std::string name;
  int64_t calls = 0;
  double seconds = 0;
};
void region_profile_record(const char* name, double seconds);
// What was recorded since linear_profile_start, most time first.
std::vector<RegionProfileEntry> region_profile();

// Bytes of weight data and block scales a product reads once.
double weight_bytes(const LinearWeight& w);
const char* format_name(WeightFormat f);

}  // namespace strata::kernels

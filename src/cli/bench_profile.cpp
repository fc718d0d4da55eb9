#include "cli/bench_profile.h"

#include <cstdio>
#include <string>

namespace strata::cli {

nlohmann::ordered_json profile_rows(const std::vector<kernels::LinearProfileEntry>& entries, double steps, double read_gbps) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& e : entries) {
    const double per_call = e.seconds / double(e.calls);
    const double gbps = e.weight_bytes / per_call / 1e9;
    rows.push_back({{"format", kernels::format_name(e.format)}, {"out", e.out}, {"in", e.in}, {"rows", e.rows},
                    {"calls_per_step", double(e.calls) / steps}, {"ms_per_step", 1e3 * e.seconds / steps},
                    {"weight_bytes", e.weight_bytes}, {"weight_gbps", gbps},
                    {"gmacs", double(e.out) * double(e.in) * double(e.rows) / per_call / 1e9},
                    {"pct_of_read_probe", read_gbps > 0 ? 100 * gbps / read_gbps : 0}});
  }
  return rows;
}

double profiled_ms(const nlohmann::ordered_json& rows) {
  double ms = 0;
  for (const auto& r : rows) ms += r["ms_per_step"].get<double>();
  return ms;
}

void print_profile(const nlohmann::ordered_json& rows, bool probed, const char* indent) {
  for (const auto& r : rows) {
    std::printf("%s%-4s %7lld x %-6lld rows %-3lld %6.2f calls %8.3f ms  %6.1f GB/s", indent,
                r["format"].get<std::string>().c_str(), (long long)r["out"].get<int64_t>(), (long long)r["in"].get<int64_t>(),
                (long long)r["rows"].get<int64_t>(), r["calls_per_step"].get<double>(), r["ms_per_step"].get<double>(),
                r["weight_gbps"].get<double>());
    if (probed) std::printf(" (%3.0f%% of read)", r["pct_of_read_probe"].get<double>());
    std::printf("  %6.1f GMAC/s\n", r["gmacs"].get<double>());
  }
}

}  // namespace strata::cli

// `strata bench --profile`: the products of the prefill or of decode steps by weight shape (kernels/linear_profile.h)
// as JSON rows — per step: calls and ms; while a product ran: weight GB/s (a share of the read
// probe) and fp64-lane GMAC/s — and as text.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/linear_profile.h"

namespace strata::cli {

// steps: the steps the entries were recorded over (1 for a prefill); read_gbps: the read probe (0: none)
nlohmann::ordered_json profile_rows(const std::vector<kernels::LinearProfileEntry>& entries, double steps, double read_gbps);
// the rows' total ms per step
double profiled_ms(const nlohmann::ordered_json& rows);
void print_profile(const nlohmann::ordered_json& rows, bool probed, const char* indent);

}  // namespace strata::cli

// A test fixture that runs each test once per numerics profile (core/numerics.h): the
// invariants the exact profile is tested for — batch, chunking, threads, speculation — must hold
// bit for bit in the fast profile too.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "core/numerics.h"

namespace strata::testing {

class ProfileTest : public ::testing::TestWithParam<Numerics> {
 protected:
  ScopedNumerics profile_{GetParam()};
};

inline std::string profile_name(const ::testing::TestParamInfo<Numerics>& info) {
  return std::string(numerics_name(info.param));
}

}  // namespace strata::testing

// INSTANTIATE for a fixture derived from ProfileTest: one run per profile, named by it.
#define STRATA_EVERY_PROFILE(Fixture)                                                                   \
  INSTANTIATE_TEST_SUITE_P(Profiles, Fixture, ::testing::Values(::strata::Numerics::exact, ::strata::Numerics::fast), \
                           ::strata::testing::profile_name)

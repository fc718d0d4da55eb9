#include <cstdio>
#include <exception>

#include "cli/app.h"

int main(int argc, char** argv) {
  try {
    return strata::cli::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata: error: %s\n", e.what());
    return 1;
  }
}

// Commands that run in one process only: under `mpirun -np N` with N > 1 they stop at once
// with this Error, before any rank loads a model or waits in a collective.
#pragma once
#include <string>

#include "core/error.h"
#include "dist/world.h"

namespace strata::cli {

inline void require_one_process(const std::string& command) {
  if (dist::size() > 1)
    throw Error(command + " runs in one process: over " + std::to_string(dist::size()) +
                " MPI ranks, use generate or logits (docs/distributed.md)");
}

}  // namespace strata::cli

// The `strata` command line: subcommands register themselves in app.cpp.
#pragma once

namespace strata::cli {

// Parses argv and runs one subcommand; returns the process exit code. Errors are thrown as
// strata::Error and printed by main as one line.
int run(int argc, char** argv);

}  // namespace strata::cli

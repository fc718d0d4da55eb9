// Runs the strata binary with arguments and captures exit code, stdout and stderr.
#pragma once
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>
#include <utility>

namespace strata::test {

struct CommandResult {
  int code = -1;
  std::string out, err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline CommandResult run_strata(const std::string& args, const std::string& env = "") {
  static int n = 0;
  const std::string err_file = "/tmp/strata_cli_err_" + std::to_string(::getpid()) + "_" + std::to_string(n++);
  const std::string cmd = env + " " + STRATA_BINARY + std::string(" ") + args + " 2>" + err_file;
  CommandResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  size_t k;
  while ((k = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), k);
  int st = ::pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  if (FILE* f = std::fopen(err_file.c_str(), "r")) {
    while ((k = std::fread(buf.data(), 1, buf.size(), f)) > 0) r.err.append(buf.data(), k);
    std::fclose(f);
  }
  std::remove(err_file.c_str());
  return r;
}

// Runs a shell command; its exit code and its stdout and stderr together.
inline std::pair<int, std::string> run_shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf;
  size_t k;
  while ((k = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), k);
  int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), out};
}

}  // namespace strata::test

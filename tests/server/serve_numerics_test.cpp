// `strata serve` as a process: the numerics profile it is started with (--numerics, else
// STRATA_NUMERICS, else serve's default) is what /v1/models and /metrics report.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/numerics_defaults.h"
#include "cli/run_command.h"

namespace strata {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// `strata serve --port 0 ARGS` with STRATA_NUMERICS set to env (unset: nullopt), stderr in a
// file; the constructor waits for the address it prints. SIGTERM at the end.
class ServeProcess {
 public:
  ServeProcess(const std::vector<std::string>& args, const std::optional<std::string>& env)
      : err_file_((std::filesystem::temp_directory_path() /
                   ("strata_serve_numerics_" + std::to_string(::getpid()) + "_" + std::to_string(count_++))).string()) {
    std::vector<std::string> argv{STRATA_BINARY, "serve", "--host", "127.0.0.1", "--port", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      if (env) ::setenv("STRATA_NUMERICS", env->c_str(), 1);
      else ::unsetenv("STRATA_NUMERICS");
      const int fd = ::open(err_file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 2);
      ::dup2(::open("/dev/null", O_WRONLY), 1);
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    const std::regex listening(R"(listening on http://127\.0\.0\.1:(\d+))");
    while (std::chrono::steady_clock::now() < until) {
      std::smatch m;
      const std::string err = read_file(err_file_);
      if (std::regex_search(err, m, listening)) {
        port_ = std::stoi(m[1].str());
        return;
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~ServeProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    std::filesystem::remove(err_file_);
  }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  int port() const { return port_; }  // 0: it did not start
  std::string err() const { return read_file(err_file_); }

  // The profile /v1/models reports; /metrics must agree.
  std::string reported_profile() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(20, 0);
    auto models = c.Get("/v1/models");
    if (!models || models->status != 200) return "no /v1/models";
    const auto j = nlohmann::json::parse(models->body);
    const std::string profile = j["data"][0].value("numerics", "none");
    auto metrics = c.Get("/metrics");
    if (!metrics || metrics->body.find("\nstrata_numerics_info{profile=\"" + profile + "\"} 1\n") == std::string::npos)
      return "/metrics disagrees with /v1/models' " + profile;
    return profile;
  }

 private:
  static inline int count_ = 0;
  std::string err_file_;
  pid_t pid_ = -1;
  int port_ = 0;
};

class ServeNumerics : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/strata_serve_numerics_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    const auto made = test::run_strata("make-model --preset flash-tiny --seed 0 --out " + test::shell_quote(dir_ + "/tiny"));
    ASSERT_EQ(made.code, 0) << made.err;
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  static std::string profile(std::vector<std::string> args, const std::optional<std::string>& env) {
    args.insert(args.begin(), {"--model", dir_ + "/tiny"});
    ServeProcess s(args, env);
    EXPECT_GT(s.port(), 0) << s.err();
    if (s.port() == 0) return "not started";
    EXPECT_NE(s.err().find("strata serve: numerics " + s.reported_profile() + "\n"), std::string::npos) << s.err();
    return s.reported_profile();
  }

  static inline std::string dir_;
};

TEST_F(ServeNumerics, FlagThenEnvironmentThenDefault) {
  EXPECT_EQ(profile({"--numerics", "fast"}, std::nullopt), "fast");
  EXPECT_EQ(profile({}, "fast"), "fast");
  EXPECT_EQ(profile({"--numerics", "exact"}, "fast"), "exact");
  EXPECT_EQ(profile({}, std::nullopt), numerics_name(cli::default_numerics("serve")));
}

}  // namespace
}  // namespace strata

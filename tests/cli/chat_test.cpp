// `strata chat` end to end through the binary on a random flash-tiny checkpoint: /help, /save
// and /load, unknown commands, the two multi-line conventions, Ctrl-C during a reply and at the
// prompt; and the CLI's seed: a random one without --seed, the same output with the same --seed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "run_command.h"
#include "tiny_checkpoint.h"

extern char** environ;

namespace strata {
namespace {
namespace fs = std::filesystem;
using test::CommandResult;
using test::run_strata;
using test::shell_quote;
using clock_type = std::chrono::steady_clock;

test::TinyCheckpoint& tiny() {
  static test::TinyCheckpoint t("chat", 5);
  return t;
}

std::string path_in_tiny(const std::string& name) { return tiny().dir + "/" + name; }

// `strata chat` with `input` on stdin; `timeout` turns a hang into a failure.
CommandResult chat(const std::string& input, const std::string& args = "--temperature 0 --max-tokens 3") {
  static int n = 0;
  const std::string in = path_in_tiny("input_" + std::to_string(n++) + ".txt");
  std::ofstream(in) << input;
  return run_strata("chat --model " + shell_quote(tiny().dir) + " " + args + " < " + shell_quote(in), "timeout 120");
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);  // throws, failing the test, for a missing or malformed file
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

TEST(Chat, HelpListsTheCommandsAndMultiLineInput) {
  auto r = chat("/help\n/exit\n");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"/help", "/save FILE", "/load FILE", "/reset", "/exit", "end a line with \\", R"(""")", "Ctrl-C"})
    EXPECT_NE(r.err.find(s), std::string::npos) << s << "\n" << r.err;
  EXPECT_EQ(r.err.find("tokens/s"), std::string::npos) << "nothing is sent to the model\n" << r.err;
  auto help = run_strata("chat --help");
  ASSERT_EQ(help.code, 0) << help.err;
  for (const char* s : {"/save FILE", "/load FILE", R"(""")", "Ctrl-C", "random seed"})
    EXPECT_NE(help.out.find(s), std::string::npos) << s << "\n" << help.out;
}

TEST(Chat, SaveThenLoadRoundTrips) {
  const std::string a = path_in_tiny("a.json"), b = path_in_tiny("b.json"), c = path_in_tiny("c.json");
  auto r = chat("hello\n/save " + a + "\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("(saved 2 messages to " + a + ")"), std::string::npos) << r.err;
  const auto saved = read_json(a);
  ASSERT_TRUE(saved.is_array());
  ASSERT_EQ(saved.size(), 2u) << saved.dump();
  EXPECT_EQ(saved[0], (nlohmann::json{{"role", "user"}, {"content", "hello"}}));
  EXPECT_EQ(saved[1]["role"], "assistant");
  EXPECT_TRUE(saved[1]["content"].is_string());

  r = chat("/load " + a + "\n/save " + b + "\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("(loaded 2 messages from " + a + ")"), std::string::npos) << r.err;
  EXPECT_EQ(read_json(b), saved);

  // A loaded conversation goes on: the next turn is added to it, and /reset clears it.
  r = chat("/load " + a + "\nagain\n/save " + c + "\n/reset\n/save " + b + "\n");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto longer = read_json(c);
  ASSERT_EQ(longer.size(), 4u) << longer.dump();
  EXPECT_EQ(longer[0], saved[0]);
  EXPECT_EQ(longer[1], saved[1]);
  EXPECT_EQ(longer[2], (nlohmann::json{{"role", "user"}, {"content", "again"}}));
  EXPECT_EQ(read_json(b), nlohmann::json::array());
}

TEST(Chat, BadLoadIsAOneLineErrorAndKeepsTheConversation) {
  const std::string missing = path_in_tiny("missing.json"), corrupt = path_in_tiny("corrupt.json"),
                    not_messages = path_in_tiny("not_messages.json"), kept = path_in_tiny("kept.json");
  std::ofstream(corrupt) << R"([{"role": "user", "content": )";
  std::ofstream(not_messages) << R"([{"role": "wizard", "content": "hi"}])";
  auto r = chat("hi\n/load " + missing + "\n/load " + corrupt + "\n/load " + not_messages + "\n/load\n/save " + kept +
                "\nmore\n/exit\n");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string& want : {"(error: " + missing + ": cannot read", "(error: " + corrupt + ": not JSON",
                                  "(error: " + not_messages + ": message 0 has role \"wizard\"", std::string("(usage: /load FILE)")}) {
    const size_t at = r.err.find(want);
    ASSERT_NE(at, std::string::npos) << want << "\n" << r.err;
    const size_t eol = r.err.find('\n', at);
    EXPECT_EQ(r.err[eol - 1], ')') << "one line: " << r.err.substr(at, eol - at);
  }
  EXPECT_EQ(read_json(kept).size(), 2u);
  EXPECT_EQ(count(r.err, "tokens/s"), 2u) << "the session went on after the errors\n" << r.err;
}

TEST(Chat, UnknownCommandIsNotSent) {
  const std::string s = path_in_tiny("unknown.json");
  auto r = chat("/frobnicate now\n/save " + s + "\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("(unknown command /frobnicate; /help lists the commands)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("tokens/s"), std::string::npos) << r.err;
  EXPECT_EQ(read_json(s), nlohmann::json::array());
}

TEST(Chat, MultiLineMessages) {
  const std::string s = path_in_tiny("multi.json");
  const std::string input =
      "first \\\n"
      "second\n"
      "\"\"\"\n"
      "third\n"
      "  /not a command \\\n"
      "\"\"\"\n"
      "\"\"\"inline\n"
      "block\"\"\"\n"
      "/save " + s + "\n";
  auto r = chat(input);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto m = read_json(s);
  ASSERT_EQ(m.size(), 6u) << m.dump();
  EXPECT_EQ(m[0]["content"], "first \nsecond");
  EXPECT_EQ(m[2]["content"], "third\n  /not a command \\");
  EXPECT_EQ(m[4]["content"], "inline\nblock");
  EXPECT_NE(r.err.find("... "), std::string::npos) << "a continuation prompt\n" << r.err;
}

// `strata chat` on pipes, for sending Ctrl-C at chosen moments. Every wait has a deadline.
class ChatProcess {
 public:
  explicit ChatProcess(const std::vector<std::string>& args) {
    ::signal(SIGPIPE, SIG_IGN);  // a child that died early fails the test, not the test binary
    int in[2], out[2], err[2];
    if (::pipe(in) || ::pipe(out) || ::pipe(err)) throw std::runtime_error("pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) posix_spawn_file_actions_addclose(&fa, fd);
    // The child starts with SIGINT and SIGPIPE at their defaults and unblocked, whatever ran us.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t defaults, none;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGPIPE);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    std::vector<std::string> full = {STRATA_BINARY};
    full.insert(full.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : full) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, STRATA_BINARY, &fa, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    in_ = in[1];
    out_ = out[0];
    err_ = err[0];
    if (rc != 0) throw std::runtime_error("posix_spawn failed");
  }
  ~ChatProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    for (int fd : {in_, out_, err_})
      if (fd >= 0) ::close(fd);
  }

  const std::string& out() const { return out_text_; }
  const std::string& err() const { return err_text_; }
  void send(const std::string& s) { ASSERT_EQ(::write(in_, s.data(), s.size()), ssize_t(s.size())); }
  void interrupt() { ::kill(pid_, SIGINT); }

  // Collects output until `done` holds; false if it does not within `seconds`.
  bool wait_for(const std::function<bool()>& done, double seconds = 60) {
    const auto deadline = clock_type::now() + std::chrono::duration<double>(seconds);
    while (!done()) {
      if (clock_type::now() > deadline) return false;
      pollfd p[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
      if (::poll(p, 2, 50) < 0) return false;
      for (int i = 0; i < 2; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP))) continue;
        char buf[4096];
        const ssize_t n = ::read(p[i].fd, buf, sizeof buf);
        if (n > 0) (i ? err_text_ : out_text_).append(buf, size_t(n));
      }
    }
    return true;
  }
  bool wait_for_err(const std::string& s, size_t times = 1, double seconds = 60) {
    return wait_for([&] { return count(err_text_, s) >= times; }, seconds);
  }

  // The exit code, or -1 if the process is still running after `seconds`.
  int wait_exit(double seconds = 60) {
    const auto deadline = clock_type::now() + std::chrono::duration<double>(seconds);
    while (clock_type::now() < deadline) {
      wait_for([] { return false; }, 0.05);  // keep the pipes drained
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  std::string out_text_, err_text_;
};

TEST(Chat, CtrlCStopsTheReplyAndTheSessionGoesOn) {
  const std::string s = path_in_tiny("stopped.json");
  // Replies that would run far longer than the test: each ends only by Ctrl-C.
  ChatProcess p({"chat", "--model", tiny().dir, "--temperature", "0", "--max-tokens", "100000"});
  ASSERT_TRUE(p.wait_for_err("> ")) << p.err();
  p.send("tell me a long story\n");
  ASSERT_TRUE(p.wait_for([&] { return !p.out().empty(); })) << p.err();
  p.interrupt();
  ASSERT_TRUE(p.wait_for_err("cancelled]")) << p.err();
  ASSERT_TRUE(p.wait_for_err("> ", 2)) << "the prompt comes back\n" << p.err();
  const size_t first_reply = p.out().size();
  p.send("and another\n");
  ASSERT_TRUE(p.wait_for([&] { return p.out().size() > first_reply + 1; })) << "the second message is answered\n"
                                                                             << p.err();
  p.interrupt();
  ASSERT_TRUE(p.wait_for_err("cancelled]", 2)) << p.err();
  p.send("/save " + s + "\n/exit\n");
  EXPECT_EQ(p.wait_exit(), 0) << p.err();
  const auto m = read_json(s);
  ASSERT_EQ(m.size(), 4u) << m.dump();
  EXPECT_EQ(m[0]["content"], "tell me a long story");
  EXPECT_EQ(m[1]["role"], "assistant");
  EXPECT_FALSE(m[1]["content"].get<std::string>().empty()) << "the partial reply stays in the conversation";
  EXPECT_EQ(m[2]["content"], "and another");
}

TEST(Chat, CtrlCAtThePromptHintsThenQuitsWhenRepeated) {
  const std::string s = path_in_tiny("prompt.json");
  ChatProcess p({"chat", "--model", tiny().dir, "--temperature", "0", "--max-tokens", "3"});
  ASSERT_TRUE(p.wait_for_err("> ")) << p.err();
  p.send("\"\"\"\nhalf a message\n");
  ASSERT_TRUE(p.wait_for_err("... ", 2)) << p.err();
  p.interrupt();
  ASSERT_TRUE(p.wait_for_err("(message dropped)")) << p.err();
  p.send("/save " + s + "\n");
  ASSERT_TRUE(p.wait_for_err("(saved 0 messages")) << "the dropped message was not sent\n" << p.err();
  p.interrupt();
  ASSERT_TRUE(p.wait_for_err("as does Ctrl-C again")) << p.err();
  p.interrupt();
  EXPECT_EQ(p.wait_exit(), 0) << p.err();
}

// Sampling at temperature 1 on random weights, whose next-token distributions are nearly flat:
// five unseeded runs all alike would need the same draw for every one of 8 tokens.
TEST(Generate, RandomSeedWithoutSeedOptionSameOutputWithIt) {
  const std::string base = "generate --model " + shell_quote(tiny().dir) + " --ids 5,6,7 --max-tokens 8 --print-ids --temperature 1";
  std::set<std::string> unseeded;
  for (int i = 0; i < 5; ++i) {
    auto r = run_strata(base, "timeout 120");
    ASSERT_EQ(r.code, 0) << r.err;
    unseeded.insert(r.out);
  }
  EXPECT_GT(unseeded.size(), 1u);
  auto a = run_strata(base + " --seed 11", "timeout 120");
  auto b = run_strata(base + " --seed 11", "timeout 120");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(count(a.out, "\n"), 8u) << a.out;
  EXPECT_EQ(a.out, b.out);
}

}  // namespace
}  // namespace strata

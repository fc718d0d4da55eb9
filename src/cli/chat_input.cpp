#include "cli/chat_input.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace strata::cli {
namespace {

constexpr std::string_view kFence = R"(""")";

std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (size_t i = 0; i < lines.size(); ++i) s += (i ? "\n" : "") + lines[i];
  return s;
}

}  // namespace

LineReader::LineReader(int fd, std::function<bool()> interrupted) : fd_(fd), interrupted_(std::move(interrupted)) {}

InputStatus LineReader::read_line(std::string& line) {
  while (true) {
    if (const size_t nl = buf_.find('\n'); nl != std::string::npos) {
      line.assign(buf_, 0, nl);
      buf_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return InputStatus::ok;
    }
    if (eof_) {
      if (buf_.empty()) return InputStatus::eof;
      line = std::move(buf_);
      buf_.clear();
      return InputStatus::ok;
    }
    if (interrupted_()) return InputStatus::interrupted;
    // A short poll rather than a blocking read: Ctrl-C may be delivered to any of the engine's
    // threads, which would not interrupt a read on this one.
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) throw Error(std::string("reading the input: ") + std::strerror(errno));
    if (ready <= 0) continue;
    char chunk[4096];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw Error(std::string("reading the input: ") + std::strerror(errno));
    }
    if (n == 0) eof_ = true;
    else buf_.append(chunk, size_t(n));
  }
}

ChatInput read_message(LineReader& in, const std::function<void(bool)>& prompt) {
  enum class Mode { first, continued, block } mode = Mode::first;
  std::vector<std::string> lines;
  ChatInput r;
  std::string line;
  while (true) {
    prompt(mode != Mode::first);
    const InputStatus s = in.read_line(line);
    if (s == InputStatus::interrupted) {
      r.status = s;
      r.discarded = mode != Mode::first;
      return r;
    }
    if (s == InputStatus::eof) {
      if (mode == Mode::first) r.status = s;
      else r.text = join_lines(lines);
      return r;
    }
    std::string_view v = line;
    if (mode == Mode::block) {
      if (v.ends_with(kFence)) {
        v.remove_suffix(kFence.size());
        if (!v.empty()) lines.emplace_back(v);
        r.text = join_lines(lines);
        return r;
      }
      lines.push_back(line);
      continue;
    }
    if (mode == Mode::first && v.starts_with(kFence)) {
      v.remove_prefix(kFence.size());
      if (v.ends_with(kFence)) {  // """one line"""
        v.remove_suffix(kFence.size());
        r.text = std::string(v);
        return r;
      }
      if (!v.empty()) lines.emplace_back(v);
      mode = Mode::block;
      continue;
    }
    if (v.ends_with('\\')) {
      v.remove_suffix(1);
      lines.emplace_back(v);
      mode = Mode::continued;
      continue;
    }
    r.command = mode == Mode::first && v.starts_with('/');
    lines.emplace_back(v);
    r.text = join_lines(lines);
    return r;
  }
}

}  // namespace strata::cli

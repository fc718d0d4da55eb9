// `strata chat`'s input: lines read straight from a file descriptor, so that waiting for one
// also watches for Ctrl-C, gathered into messages by two multi-line conventions.
#pragma once
#include <functional>
#include <string>

namespace strata::cli {

enum class InputStatus { ok, eof, interrupted };

class LineReader {
 public:
  // `interrupted` is asked while waiting for input (and takes the Ctrl-C flag).
  LineReader(int fd, std::function<bool()> interrupted);
  // The next line without its "\n" or "\r\n"; a last line without one counts too.
  InputStatus read_line(std::string& line);

 private:
  int fd_;
  std::function<bool()> interrupted_;
  std::string buf_;
  bool eof_ = false;
};

struct ChatInput {
  InputStatus status = InputStatus::ok;
  std::string text;        // the message, when ok
  bool command = false;    // a single line starting with '/'
  bool discarded = false;  // interrupted after part of a multi-line message was typed
};

// One message. A line ending in a backslash continues on the next line, the backslash becoming
// a newline (llama.cpp's convention); a line starting with """ opens a block, taken verbatim
// until a line ending with """ (ollama's). The end of input inside a message ends the message.
// prompt(continuation) is called before each line.
ChatInput read_message(LineReader& in, const std::function<void(bool continuation)>& prompt);

}  // namespace strata::cli

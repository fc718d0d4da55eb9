#include "text/dsml.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/dsv4_tokens.h"
#include "text/marker_scan.h"
#include "text/py_json.h"

namespace strata {

using dsv4::kDsml;

std::string dsml_invoke(std::string_view name, std::string_view arguments, bool text_as_argument) {
  auto args = nlohmann::ordered_json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  if (args.is_discarded() && !text_as_argument)
    throw Error("tool call '" + std::string(name) + "': arguments are not JSON");
  if (args.is_discarded()) args = nlohmann::ordered_json{{"arguments", std::string(arguments)}};
  if (!args.is_object())
    throw Error("tool call '" + std::string(name) + "': arguments must be a JSON object");
  std::string out = "<";
  out += kDsml;
  out += "invoke name=\"";
  out += name;
  out += "\">\n";
  bool first = true;
  for (const auto& [key, value] : args.items()) {
    if (!first) out += '\n';
    first = false;
    out += '<';
    out += kDsml;
    out += "parameter name=\"";
    out += key;
    out += value.is_string() ? "\" string=\"true\">" : "\" string=\"false\">";
    if (value.is_string())
      out += value.get_ref<const std::string&>();
    else
      append_py_json(out, value);
    out += "</";
    out += kDsml;
    out += "parameter>";
  }
  out += "\n</";
  out += kDsml;
  out += "invoke>";
  return out;
}

std::string dsml_tool_calls_block(const std::vector<ToolCall>& calls, const dsv4::DsmlBlock& block,
                                  bool text_as_argument) {
  std::string out = "\n\n";
  out += block.open;
  out += '\n';
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i) out += '\n';
    out += dsml_invoke(calls[i].name, calls[i].arguments, text_as_argument);
  }
  out += '\n';
  out += block.close;
  return out;
}

namespace {

// Length of the UTF-8 whitespace character at the front of s (Python's str.isspace), or 0.
size_t py_space_len(std::string_view s) {
  if (s.empty()) return 0;
  const auto c = static_cast<unsigned char>(s[0]);
  if ((c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20)) return 1;
  static constexpr std::string_view kWide[] = {
      "\u0085", "\u00a0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003", "\u2004", "\u2005",
      "\u2006", "\u2007", "\u2008", "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"};
  for (std::string_view w : kWide)
    if (s.starts_with(w)) return w.size();
  return 0;
}

// A short one-line excerpt for error messages, cut on a UTF-8 character boundary.
std::string shorten(std::string_view s) {
  size_t n = std::min<size_t>(s.size(), 80);
  while (n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  std::string out(s.substr(0, n));
  if (n < s.size()) out += "...";
  for (char& c : out)
    if (c == '\n') c = ' ';
  return out;
}

// The official pattern ^\s*name="(.*?)">\n$ : Python's '$' also matches before one final
// newline, which is why an invoke without parameters ("...\">\n\n</｜DSML｜invoke") parses.
bool match_invoke_name(std::string_view content, std::string& name) {
  while (size_t n = py_space_len(content)) content.remove_prefix(n);
  if (!content.starts_with("name=\"")) return false;
  content.remove_prefix(6);
  if (content.ends_with("\">\n\n")) {
    name = content.substr(0, content.size() - 4);
  } else if (content.ends_with("\">\n")) {
    name = content.substr(0, content.size() - 3);
  } else {
    return false;
  }
  return true;
}

}  // namespace

// The official pattern ^ name="(.*?)" string="(true|false)">(.*?)<$ on the text between
// "<｜DSML｜parameter" and "/｜DSML｜parameter".
void DsmlReader::take_param(std::string_view content) {
  const auto fail = [&] { throw Error("DSML parameter format error: '" + shorten(content) + "'"); };
  if (!content.starts_with(" name=\"")) fail();
  size_t value_end;
  if (content.ends_with("<"))
    value_end = content.size() - 1;
  else if (content.ends_with("<\n"))
    value_end = content.size() - 2;
  else
    fail();
  static constexpr std::string_view kTrue = "\" string=\"true\">", kFalse = "\" string=\"false\">";
  const size_t t = content.find(kTrue, 7), f = content.find(kFalse, 7);
  const bool is_string = t <= f;
  const size_t tag = is_string ? t : f;
  const size_t value_begin = tag == std::string_view::npos ? tag : tag + (is_string ? kTrue : kFalse).size();
  if (tag == std::string_view::npos || value_begin > value_end) fail();
  Param p{std::string(content.substr(7, tag - 7)), std::string(content.substr(value_begin, value_end - value_begin)),
          is_string};
  for (const Param& q : params_)
    if (q.name == p.name) throw Error("DSML duplicate parameter name: '" + p.name + "'");
  params_.push_back(std::move(p));
}

// Arguments text as the official decoder builds it: string parameters become JSON strings,
// the others are pasted verbatim (the model wrote them as JSON).
void DsmlReader::end_invoke(std::vector<ToolCall>& out) {
  ToolCall call{std::move(name_), "{"};
  for (size_t i = 0; i < params_.size(); ++i) {
    if (i) call.arguments += ", ";
    append_py_json_string(call.arguments, params_[i].name);
    call.arguments += ": ";
    if (params_[i].is_string)
      append_py_json_string(call.arguments, params_[i].value);
    else
      call.arguments += params_[i].value;
  }
  call.arguments += '}';
  params_.clear();
  name_.clear();
  out.push_back(std::move(call));
}

// One read of the official parser: `content` is the text before stop string number `which`.
void DsmlReader::step(std::string_view content, int which, std::vector<ToolCall>& out) {
  switch (state_) {
    case State::kOpen:  // stops: invoke open, block close
      if (content != ">\n") throw Error("DSML tool call format error: expected '>\\n' but got '" + shorten(content) + "'");
      state_ = which == 0 ? State::kName : State::kClosed;
      break;
    case State::kName:  // stops: parameter open, invoke close
      if (!match_invoke_name(content, name_)) throw Error("DSML tool name format error: '" + shorten(content) + "'");
      if (which == 0) {
        state_ = State::kParamBody;
      } else {
        end_invoke(out);
        state_ = State::kOpen;
      }
      break;
    case State::kParamBody:  // stop: parameter close
      take_param(content);
      state_ = State::kParamAfter;
      break;
    case State::kParamAfter:  // stops: parameter open, invoke close
      if (content != ">\n")
        throw Error("DSML parameter format error: expected '>\\n' but got '" + shorten(content) + "'");
      if (which == 0) {
        state_ = State::kParamBody;
      } else {
        end_invoke(out);
        state_ = State::kOpen;
      }
      break;
    case State::kClosed:
      break;
  }
}

void DsmlReader::feed(std::string_view text, std::vector<ToolCall>& out) {
  if (start_ > buf_.size() / 2) {
    buf_.erase(0, start_);
    from_ -= start_;
    start_ = 0;
  }
  buf_ += text;
  while (state_ != State::kClosed) {
    MarkerHit hit;
    switch (state_) {
      case State::kOpen: hit = scan_markers(buf_, from_, {dsv4::kInvokeOpen, block_.close}, false); break;
      case State::kParamBody: hit = scan_markers(buf_, from_, {dsv4::kParamClose}, false); break;
      default: hit = scan_markers(buf_, from_, {dsv4::kParamOpen, dsv4::kInvokeClose}, false); break;
    }
    if (hit.which < 0) {
      from_ = hit.pos;
      return;
    }
    const std::string_view content = std::string_view(buf_).substr(start_, hit.pos - start_);
    start_ = from_ = hit.pos + hit.len;
    step(content, hit.which, out);
  }
}

void DsmlReader::finish(std::vector<ToolCall>& out) {
  const std::string rest = buf_.substr(start_);
  buf_.clear();
  start_ = from_ = 0;
  switch (state_) {
    case State::kOpen:  // the official loop stops quietly when nothing is left
      if (rest.empty()) return;
      if (rest != ">\n") throw Error("DSML tool call format error: expected '>\\n' but got '" + shorten(rest) + "'");
      throw Error("DSML tool calls: missing " + std::string(block_.close));
    case State::kName:
      if (!match_invoke_name(rest, name_)) throw Error("DSML tool name format error: '" + shorten(rest) + "'");
      end_invoke(out);
      break;
    case State::kParamBody:
      throw Error("DSML parameter not closed: '" + shorten(rest) + "'");
    case State::kParamAfter:
      if (rest != ">\n") throw Error("DSML parameter format error: expected '>\\n' but got '" + shorten(rest) + "'");
      end_invoke(out);
      break;
    case State::kClosed:
      buf_ = rest;
      return;
  }
  state_ = State::kOpen;
}

}  // namespace strata

#include "text/jinja/lexer.h"

#include <algorithm>
#include <cctype>

#include "text/jinja/js_text.h"
#include "text/jinja/preprocess.h"
#include "text/utf8.h"

namespace strata::jinja {
namespace {

bool is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

struct Rule {
  std::string_view seq;
  Tok type;
};

// In the reference's order: the longer of two operators sharing a first character comes first.
constexpr Rule kRules[] = {
    {"{%", Tok::kOpenStatement}, {"%}", Tok::kCloseStatement}, {"{{", Tok::kOpenExpression},
    {"}}", Tok::kCloseExpression}, {"(", Tok::kOpenParen},     {")", Tok::kCloseParen},
    {"{", Tok::kOpenBrace},        {"}", Tok::kCloseBrace},    {"[", Tok::kOpenBracket},
    {"]", Tok::kCloseBracket},     {",", Tok::kComma},         {".", Tok::kDot},
    {":", Tok::kColon},            {"|", Tok::kPipe},          {"<=", Tok::kComparison},
    {">=", Tok::kComparison},      {"==", Tok::kComparison},   {"!=", Tok::kComparison},
    {"<", Tok::kComparison},       {">", Tok::kComparison},    {"+", Tok::kAdditive},
    {"-", Tok::kAdditive},         {"~", Tok::kAdditive},      {"**", Tok::kPower},
    {"*", Tok::kMultiplicative},   {"//", Tok::kMultiplicative}, {"/", Tok::kMultiplicative},
    {"%", Tok::kMultiplicative},   {"=", Tok::kEquals},
};

class Lexer {
 public:
  explicit Lexer(std::string_view source) : source_(source), m_(preprocess(source)), s_(m_.text) {
    for (size_t i = 0; i < source.size(); ++i)
      if (source[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    while (pos_ < s_.size()) step();
    return std::move(tokens_);
  }

 private:
  // Line and column (in characters) of byte i of the preprocessed text.
  SourcePos where(size_t i) const {
    const size_t off = i < m_.origin.size() ? m_.origin[i] : source_.size();
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), off);
    const size_t line_start = it == line_starts_.begin() ? 0 : *(it - 1);
    int col = 1;
    for (size_t j = line_start; j < off;) {
      j += size_t(utf8_next(source_, j).len);
      ++col;
    }
    return {int(it - line_starts_.begin()) + 1, col};
  }

  [[noreturn]] void error(const std::string& msg, size_t at) const { throw TemplateError(msg, where(at)); }

  Tok last_type() const { return tokens_.empty() ? Tok::kText : tokens_.back().type; }
  bool at_text() const {
    return tokens_.empty() || last_type() == Tok::kCloseStatement || last_type() == Tok::kCloseExpression ||
           last_type() == Tok::kComment;
  }

  void push(Tok t, std::string v, size_t at) { tokens_.push_back({t, std::move(v), where(at)}); }

  void strip_trailing_whitespace() {
    if (tokens_.empty() || tokens_.back().type != Tok::kText) return;
    std::string& v = tokens_.back().value;
    v.resize(js_trim_end(v).size());
    if (v.empty()) tokens_.pop_back();
  }

  void skip_whitespace() {
    while (size_t n = js_space_at(s_, pos_)) pos_ += n;
  }

  void step() {
    if (at_text()) {
      size_t end = pos_;
      for (;;) {
        end = s_.find('{', end);
        if (end == std::string_view::npos) {
          end = s_.size();
          break;
        }
        const char next = end + 1 < s_.size() ? s_[end + 1] : '\0';
        if (next == '%' || next == '{' || next == '#') break;
        ++end;
      }
      if (end > pos_) {
        push(Tok::kText, std::string(s_.substr(pos_, end - pos_)), pos_);
        pos_ = end;
        return;
      }
    }
    if (s_[pos_] == '{') {
      const char next = pos_ + 1 < s_.size() ? s_[pos_ + 1] : '\0';
      if (next == '#') return comment();
      if (pos_ + 2 < s_.size() && s_[pos_ + 2] == '-' && (next == '%' || next == '{')) {
        strip_trailing_whitespace();
        push(next == '%' ? Tok::kOpenStatement : Tok::kOpenExpression, next == '%' ? "{%" : "{{", pos_);
        if (next == '{') curly_depth_ = 0;
        pos_ += 3;
        return;
      }
    }
    skip_whitespace();
    if (pos_ >= s_.size()) error("unexpected end of template inside a tag", s_.size());
    const char c = s_[pos_];
    if (c == '-' && pos_ + 2 < s_.size() && s_[pos_ + 2] == '}' && (s_[pos_ + 1] == '%' || s_[pos_ + 1] == '}')) {
      const bool statement = s_[pos_ + 1] == '%';
      push(statement ? Tok::kCloseStatement : Tok::kCloseExpression, statement ? "%}" : "}}", pos_);
      pos_ += 3;
      skip_whitespace();
      if (statement) raw_body();
      return;
    }
    if ((c == '-' || c == '+') && unary_position()) return unary(c);
    for (const Rule& r : kRules) {
      if (r.seq[0] != c) continue;
      if (r.seq == "}}" && curly_depth_ > 0) continue;
      if (s_.substr(pos_, r.seq.size()) != r.seq) continue;
      push(r.type, std::string(r.seq), pos_);
      if (r.type == Tok::kOpenExpression) curly_depth_ = 0;
      if (r.type == Tok::kOpenBrace) ++curly_depth_;
      if (r.type == Tok::kCloseBrace) --curly_depth_;
      pos_ += r.seq.size();
      if (r.type == Tok::kCloseStatement) raw_body();
      return;
    }
    if (c == '\'' || c == '"') return string_literal(c);
    if (is_digit(c)) {
      const size_t start = pos_;
      std::string num = digits();
      if (last_type() != Tok::kDot && pos_ + 1 < s_.size() && s_[pos_] == '.' && is_digit(s_[pos_ + 1])) {
        ++pos_;
        num += '.';
        num += digits();
      }
      push(Tok::kNumber, std::move(num), start);
      return;
    }
    if (is_word(c)) {
      const size_t start = pos_;
      while (pos_ < s_.size() && is_word(s_[pos_])) ++pos_;
      push(Tok::kName, std::string(s_.substr(start, pos_ - start)), start);
      return;
    }
    Utf8Char ch = utf8_next(s_, pos_);
    error("unexpected character '" + std::string(s_.substr(pos_, size_t(ch.len))) + "'", pos_);
  }

  std::string digits() {
    const size_t start = pos_;
    while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  bool unary_position() const {
    if (tokens_.empty() || last_type() == Tok::kText) error(std::string("unexpected character '") + s_[pos_] + "'", pos_);
    switch (last_type()) {
      case Tok::kName:
      case Tok::kNumber:
      case Tok::kString:
      case Tok::kCloseParen:
      case Tok::kCloseBracket: return false;
      default: return true;
    }
  }

  // A sign before an operand: with digits after it, part of a number literal.
  void unary(char sign) {
    const size_t start = pos_++;
    std::string num = digits();
    if (!num.empty() && pos_ + 1 < s_.size() && s_[pos_] == '.' && is_digit(s_[pos_ + 1])) {
      ++pos_;
      num += '.';
      num += digits();
    }
    const Tok type = num.empty() ? Tok::kUnary : Tok::kNumber;
    num.insert(num.begin(), sign);
    push(type, std::move(num), start);
  }

  void comment() {
    const size_t start = pos_;
    pos_ += 2;
    const bool strip_before = pos_ < s_.size() && s_[pos_] == '-';
    if (strip_before) ++pos_;
    const size_t end = s_.find("#}", pos_);
    if (end == std::string_view::npos) error("comment is not closed with #}", start);
    std::string text(s_.substr(pos_, end - pos_));
    const bool strip_after = text.ends_with('-');
    if (strip_after) text.pop_back();
    if (strip_before) strip_trailing_whitespace();
    push(Tok::kComment, std::move(text), start);
    pos_ = end + 2;
    if (strip_after) skip_whitespace();
  }

  void string_literal(char quote) {
    const size_t start = pos_++;
    std::string value;
    for (;;) {
      if (pos_ >= s_.size()) error("string literal is not closed", start);
      const char c = s_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        continue;
      }
      if (pos_ >= s_.size()) error("string literal is not closed", start);
      const char e = s_[pos_++];
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\\': value += '\\'; break;
        case 'x':
        case 'u': {
          const size_t n = e == 'x' ? 2 : 4;
          std::string_view hex = s_.substr(pos_, n);
          if (hex.size() != n || !std::all_of(hex.begin(), hex.end(), [](char h) { return std::isxdigit(static_cast<unsigned char>(h)); }))
            error("invalid escape \\" + std::string(1, e) + utf8_sanitize(hex) + " in a string literal", pos_ - 2);
          char32_t cp = char32_t(std::stoul(std::string(hex), nullptr, 16));
          pos_ += n;
          // Two \u escapes of a surrogate pair make one character; a lone surrogate has no
          // UTF-8 form and becomes U+FFFD.
          if (cp >= 0xD800 && cp <= 0xDBFF && s_.substr(pos_, 2) == "\\u" && pos_ + 6 <= s_.size()) {
            std::string_view low = s_.substr(pos_ + 2, 4);
            if (std::all_of(low.begin(), low.end(), [](char h) { return std::isxdigit(static_cast<unsigned char>(h)); })) {
              const char32_t lo = char32_t(std::stoul(std::string(low), nullptr, 16));
              if (lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                pos_ += 6;
              }
            }
          }
          utf8_append(value, cp >= 0xD800 && cp <= 0xDFFF ? char32_t(0xFFFD) : cp);
          break;
        }
        default: {
          --pos_;  // name the whole character, which may be several bytes
          error("unknown escape \\" + std::string(s_.substr(pos_, size_t(utf8_next(s_, pos_).len))) + " in a string literal",
                pos_ - 1);
        }
      }
    }
    push(Tok::kString, std::move(value), start);
  }

  // After {% raw %}: everything up to {% endraw %} is one text token.
  void raw_body() {
    const size_t n = tokens_.size();
    if (n < 3 || tokens_[n - 2].type != Tok::kName || tokens_[n - 2].value != "raw" ||
        tokens_[n - 3].type != Tok::kOpenStatement)
      return;
    for (size_t at = s_.find("{%", pos_); at != std::string_view::npos; at = s_.find("{%", at + 1)) {
      size_t j = at + 2;
      const bool strip_before = j < s_.size() && s_[j] == '-';
      if (strip_before) ++j;
      while (size_t k = js_space_at(s_, j)) j += k;
      if (s_.substr(j, 6) != "endraw" || (j + 6 < s_.size() && is_word(s_[j + 6]))) continue;
      // The tag itself is lexed as usual ({%- trims the body's trailing whitespace).
      if (at > pos_) push(Tok::kText, std::string(s_.substr(pos_, at - pos_)), pos_);
      pos_ = at;
      return;
    }
    error("{% raw %} is not closed with {% endraw %}", pos_);
  }

  std::string_view source_;
  MappedText m_;
  std::string_view s_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int curly_depth_ = 0;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

const char* token_name(Tok t) {
  switch (t) {
    case Tok::kText: return "text";
    case Tok::kNumber: return "number";
    case Tok::kString: return "string";
    case Tok::kName: return "name";
    case Tok::kEquals: return "'='";
    case Tok::kOpenParen: return "'('";
    case Tok::kCloseParen: return "')'";
    case Tok::kOpenStatement: return "'{%'";
    case Tok::kCloseStatement: return "'%}'";
    case Tok::kOpenExpression: return "'{{'";
    case Tok::kCloseExpression: return "'}}'";
    case Tok::kOpenBracket: return "'['";
    case Tok::kCloseBracket: return "']'";
    case Tok::kOpenBrace: return "'{'";
    case Tok::kCloseBrace: return "'}'";
    case Tok::kComma: return "','";
    case Tok::kDot: return "'.'";
    case Tok::kColon: return "':'";
    case Tok::kPipe: return "'|'";
    case Tok::kAdditive: return "operator";
    case Tok::kMultiplicative: return "operator";
    case Tok::kPower: return "'**'";
    case Tok::kComparison: return "comparison";
    case Tok::kUnary: return "sign";
    case Tok::kComment: return "comment";
  }
  return "token";
}

}  // namespace strata::jinja

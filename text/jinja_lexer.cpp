#include "text/jinja_lexer.h"

#include <stdexcept>
#include <utility>

#include "text/jinja_value.h"

namespace remat::jinja {
namespace {

// The template after the whitespace options, with, for every byte, its offset in the source, so
// messages point at the template as written.
struct Prepared {
  std::string text;
  std::vector<std::size_t> origin;
  void add(char c, std::size_t from) {
    text += c;
    origin.push_back(from);
  }
};

bool line_start(std::string_view s, std::size_t i) {
  if (i == 0) return true;
  const char p = s[i - 1];
  if (p == '\n' || p == '\r') return true;
  // U+2028 and U+2029 end lines too for the reference's multiline regular expression.
  return i >= 3 && s.substr(i - 3, 2) == "\xE2\x80" && (s[i - 1] == '\xA8' || s[i - 1] == '\xA9');
}

// lstrip_blocks: spaces and tabs from a line's start up to `{%`, `{#` (or `{-`) go. trim_blocks:
// the newline right after `%}`, `#}` (or `-}`) goes. Both are applied to the text as a whole,
// before tags are recognised, which is how the reference applies them.
Prepared prepare(std::string_view s) {
  if (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  Prepared lstripped;
  for (std::size_t i = 0; i < s.size();) {
    if (line_start(s, i)) {
      std::size_t j = i;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
      if (j > i && j + 1 < s.size() && s[j] == '{' &&
          (s[j + 1] == '%' || s[j + 1] == '#' || s[j + 1] == '-'))
        i = j;
    }
    lstripped.add(s[i], i);
    ++i;
  }
  Prepared out;
  const std::string& t = lstripped.text;
  for (std::size_t i = 0; i < t.size(); ++i) {
    out.add(t[i], lstripped.origin[i]);
    if (t[i] == '}' && i > 0 && (t[i - 1] == '%' || t[i - 1] == '#' || t[i - 1] == '-') &&
        i + 1 < t.size() && t[i + 1] == '\n')
      ++i;
  }
  return out;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_word(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

const std::pair<const char*, TokenType> kSymbols[] = {
    {"{%", TokenType::open_statement},
    {"%}", TokenType::close_statement},
    {"{{", TokenType::open_expression},
    {"}}", TokenType::close_expression},
    {"(", TokenType::open_paren},
    {")", TokenType::close_paren},
    {"{", TokenType::open_brace},
    {"}", TokenType::close_brace},
    {"[", TokenType::open_bracket},
    {"]", TokenType::close_bracket},
    {",", TokenType::comma},
    {".", TokenType::dot},
    {":", TokenType::colon},
    {"|", TokenType::pipe},
    {"<=", TokenType::comparison},
    {">=", TokenType::comparison},
    {"==", TokenType::comparison},
    {"!=", TokenType::comparison},
    {"<", TokenType::comparison},
    {">", TokenType::comparison},
    {"+", TokenType::additive},
    {"-", TokenType::additive},
    {"~", TokenType::additive},
    {"**", TokenType::power},
    {"*", TokenType::multiplicative},
    {"//", TokenType::multiplicative},
    {"/", TokenType::multiplicative},
    {"%", TokenType::multiplicative},
    {"=", TokenType::equals},
};

class Lexer {
 public:
  explicit Lexer(std::string_view source) : source_(source), p_(prepare(source)), s_(p_.text) {}

  std::vector<Token> run() {
    while (i_ < s_.size()) step();
    return std::move(tokens_);
  }

 private:
  std::string_view source_;
  Prepared p_;
  std::string_view s_;
  std::size_t i_ = 0;
  int brace_depth_ = 0;  // `}}` inside a dict literal closes braces, not the expression
  std::vector<Token> tokens_;
  mutable std::size_t counted_ = 0;  // source bytes already counted into line_ and column_
  mutable int line_ = 1, column_ = 1;

  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    const Token t = located(TokenType::text, "", at);
    throw std::invalid_argument("line " + std::to_string(t.line) + ", column " +
                                std::to_string(t.column) + ": " + what);
  }

  // Tokens come in source order, so the line and column are carried forward from the last one
  // rather than counted from the start each time.
  Token located(TokenType type, std::string value, std::size_t at) const {
    const std::size_t origin = at < p_.origin.size() ? p_.origin[at] : source_.size();
    if (origin < counted_) {
      counted_ = 0;
      line_ = column_ = 1;
    }
    for (; counted_ < origin && counted_ < source_.size(); ++counted_) {
      if (source_[counted_] == '\n') {
        ++line_;
        column_ = 1;
      } else {
        ++column_;
      }
    }
    return Token{type, std::move(value), line_, column_};
  }

  void push(TokenType type, std::string value, std::size_t at) {
    tokens_.push_back(located(type, std::move(value), at));
  }

  bool outside_tags() const {
    if (tokens_.empty()) return true;
    const TokenType last = tokens_.back().type;
    return last == TokenType::close_statement || last == TokenType::close_expression ||
           last == TokenType::comment;
  }

  bool at(std::string_view what) const { return s_.substr(i_, what.size()) == what; }

  void strip_trailing_text() {
    if (tokens_.empty() || tokens_.back().type != TokenType::text) return;
    tokens_.back().value = trim_end(tokens_.back().value);
    if (tokens_.back().value.empty()) tokens_.pop_back();
  }

  void skip_space() {
    while (i_ < s_.size()) {
      const std::size_t n = space_at(s_, i_);
      if (!n) break;
      i_ += n;
    }
  }

  void step() {
    if (outside_tags()) {
      const std::size_t start = i_;
      while (i_ < s_.size() && !(s_[i_] == '{' && i_ + 1 < s_.size() &&
                                 (s_[i_ + 1] == '%' || s_[i_ + 1] == '{' || s_[i_ + 1] == '#')))
        ++i_;
      if (i_ > start)
        return push(TokenType::text, std::string(s_.substr(start, i_ - start)), start);
    }
    if (at("{#")) return comment();
    if (at("{%-") || at("{{-")) {
      strip_trailing_text();
      if (s_[i_ + 1] == '{') brace_depth_ = 0;
      push(s_[i_ + 1] == '%' ? TokenType::open_statement : TokenType::open_expression,
           std::string(s_.substr(i_, 2)), i_);
      i_ += 3;
      return;
    }
    skip_space();
    if (i_ >= s_.size()) return;
    if (at("-%}") || at("-}}")) {
      push(s_[i_ + 1] == '%' ? TokenType::close_statement : TokenType::close_expression,
           std::string(s_.substr(i_ + 1, 2)), i_);
      i_ += 3;
      skip_space();
      return;
    }
    const char c = s_[i_];
    if ((c == '-' || c == '+') && sign_is_unary()) return unary_sign();
    for (const auto& [symbol, type] : kSymbols) {
      if (type == TokenType::close_expression && brace_depth_ > 0) continue;
      if (!at(symbol)) continue;
      if (type == TokenType::open_expression) brace_depth_ = 0;
      if (type == TokenType::open_brace) ++brace_depth_;
      if (type == TokenType::close_brace) --brace_depth_;
      push(type, symbol, i_);
      i_ += std::string_view(symbol).size();
      return;
    }
    if (c == '\'' || c == '"') return string_literal(c);
    if (is_digit(c)) return number();
    if (is_word(c)) {
      const std::size_t start = i_;
      while (i_ < s_.size() && is_word(s_[i_])) ++i_;
      return push(TokenType::identifier, std::string(s_.substr(start, i_ - start)), start);
    }
    fail(i_, std::string("unexpected character '") + c + "'");
  }

  void comment() {
    const std::size_t start = i_;
    i_ += 2;
    const bool strip_before = i_ < s_.size() && s_[i_] == '-';
    if (strip_before) ++i_;
    const std::size_t end = s_.find("#}", i_);
    if (end == std::string_view::npos) fail(start, "comment '{#' is never closed with '#}'");
    std::string text(s_.substr(i_, end - i_));
    const bool strip_after = !text.empty() && text.back() == '-';
    if (strip_after) text.pop_back();
    if (strip_before) strip_trailing_text();
    push(TokenType::comment, std::move(text), start);
    i_ = end + 2;
    if (strip_after) skip_space();
  }

  // A sign is part of a binary operator after an operand, and unary everywhere else.
  bool sign_is_unary() const {
    if (tokens_.empty() || tokens_.back().type == TokenType::text)
      fail(i_, std::string("unexpected '") + s_[i_] + "'");
    switch (tokens_.back().type) {
      case TokenType::identifier:
      case TokenType::number:
      case TokenType::string:
      case TokenType::close_paren:
      case TokenType::close_bracket:
        return false;
      default:
        return true;
    }
  }

  void unary_sign() {
    const std::size_t start = i_;
    const char sign = s_[i_++];
    std::string digits = take_digits();
    if (!digits.empty() && i_ + 1 < s_.size() && s_[i_] == '.' && is_digit(s_[i_ + 1])) {
      ++i_;
      digits += "." + take_digits();
    }
    push(digits.empty() ? TokenType::unary : TokenType::number, sign + digits, start);
  }

  std::string take_digits() {
    const std::size_t start = i_;
    while (i_ < s_.size() && is_digit(s_[i_])) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }

  void number() {
    const std::size_t start = i_;
    std::string digits = take_digits();
    // After a dot, `x.0.1` is two member accesses rather than a float.
    const bool after_dot = !tokens_.empty() && tokens_.back().type == TokenType::dot;
    if (!after_dot && i_ + 1 < s_.size() && s_[i_] == '.' && is_digit(s_[i_ + 1])) {
      ++i_;
      digits += "." + take_digits();
    }
    push(TokenType::number, std::move(digits), start);
  }

  void string_literal(char quote) {
    const std::size_t start = i_++;
    std::string value;
    while (true) {
      if (i_ >= s_.size()) fail(start, "string literal is never closed");
      const char c = s_[i_++];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        continue;
      }
      if (i_ >= s_.size()) fail(start, "string literal is never closed");
      value += escape(s_[i_++]);
    }
    push(TokenType::string, std::move(value), start);
  }

  std::string escape(char e) {
    switch (e) {
      case 'n':
        return "\n";
      case 't':
        return "\t";
      case 'r':
        return "\r";
      case 'b':
        return "\b";
      case 'f':
        return "\f";
      case 'v':
        return "\v";
      case '\'':
        return "'";
      case '"':
        return "\"";
      case '\\':
        return "\\";
      case 'x':
      case 'u':
        return hex_escape(e == 'x' ? 2 : 4);
      default:
        fail(i_ - 2, std::string("unknown escape '\\") + e + "' in a string literal");
    }
  }

  std::string hex_escape(std::size_t digits) {
    if (i_ + digits > s_.size()) fail(i_ - 2, "short hexadecimal escape in a string literal");
    char32_t cp = 0;
    for (std::size_t k = 0; k < digits; ++k) {
      const char h = s_[i_ + k];
      const int v = is_digit(h)                              ? h - '0'
                    : (h | 0x20) >= 'a' && (h | 0x20) <= 'f' ? (h | 0x20) - 'a' + 10
                                                             : -1;
      if (v < 0) fail(i_ - 2, "bad hexadecimal escape in a string literal");
      cp = cp * 16 + char32_t(v);
    }
    i_ += digits;
    std::string out;
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
    return out;
  }
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  return Lexer(source).run();
}

}  // namespace remat::jinja

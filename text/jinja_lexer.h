// Tokens of a Jinja template, split the way Hugging Face's @huggingface/jinja splits them (the
// renderer chat templates are written against), so both read a template alike: trim_blocks and
// lstrip_blocks on, one trailing newline dropped, `-` inside a tag strips whitespace beside it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace remat::jinja {

enum class TokenType {
  text,            // template text between tags
  number,          // 12, 3.5, -1 (a sign right after an operator belongs to the number)
  string,          // a quoted literal, escapes resolved
  identifier,      // names and keywords alike
  equals,          // =
  open_paren,      // (
  close_paren,     // )
  open_statement,  // {%
  close_statement,
  open_expression,  // {{
  close_expression,
  open_bracket,  // [
  close_bracket,
  open_brace,  // {
  close_brace,
  comma,
  dot,
  colon,
  pipe,
  additive,        // + - ~
  multiplicative,  // * / // %
  power,           // **
  comparison,      // < > <= >= == !=
  unary,           // a lone sign before something that is not a number
  comment,         // {# ... #}
};

struct Token {
  TokenType type;
  std::string value;
  int line = 1;    // where it starts in the template as written, 1-based
  int column = 1;  // in bytes, 1-based
};

// Throws std::invalid_argument "line L, column C: ..." on text it cannot read.
std::vector<Token> tokenize(std::string_view source);

}  // namespace remat::jinja

// Syntax tree of a Jinja template (the subset Hugging Face chat templates use; see
// text/chat_template.h) and the parser that builds it from text/jinja_lexer.h's tokens, with the
// operator precedence of @huggingface/jinja.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text/jinja_value.h"

namespace remat::jinja {

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Nodes = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    // statements
    text,    // `name` is the text
    output,  // {{ a[0] }}
    if_,     // if a[0]: b else c (an elif is an if alone in c)
    for_,    // for a[0] in a[1]: b, else c when a[1] is empty
    set,     // a[0] = a[1], or a[0] = the rendering of b
    // expressions
    literal,  // `literal`
    name,     // a variable called `name`
    list,     // [a...]
    tuple,    // (a...) and bare `x, y`
    dict,     // {a[i]: b[i]}
    unary,    // `name` a[0] with name in not, -, +
    binary,   // a[0] `name` a[1]
    member,   // a[0].a[1] or a[0][a[1]]; a[1] is a literal when written with a dot
    slice,    // a[0][a[1]:a[2]:a[3]], missing bounds null
    call,     // a[0](b..., keywords[i]=c[i])
    filter,   // a[0] | name(b..., keywords[i]=c[i])
    test,     // a[0] is [not] name
    ternary,  // a[0] if a[1] else a[2] (a[2] may be null)
  };
  Kind kind;
  int line = 0, column = 0;
  std::string name;
  Value literal;
  Nodes a, b, c;
  std::vector<std::string> keywords;
  bool negate = false;  // `is not`
};

// Throws std::invalid_argument "line L, column C: ..." naming what could not be read.
Nodes parse_template(std::string_view source);

}  // namespace remat::jinja

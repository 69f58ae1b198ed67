#include "text/jinja_parser.h"

#include <charconv>
#include <stdexcept>
#include <utility>

#include "text/jinja_lexer.h"

namespace remat::jinja {
namespace {

using T = TokenType;
using K = Node::Kind;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Nodes run() {
    Nodes out;
    while (i_ < t_.size()) {
      if (auto n = any()) out.push_back(std::move(n));
    }
    return out;
  }

 private:
  static constexpr int kMaxDepth = 128;
  std::vector<Token> t_;
  std::size_t i_ = 0;
  int depth_ = 0;

  // Recursion is bounded so that a hostile template fails with a message rather than overflowing
  // the stack (while evaluating as well: the tree is no deeper than this).
  struct Nesting {
    int& depth;
    ~Nesting() { --depth; }
  };
  // For left-nested chains built in a loop (a + b + c, x.y.z, v | f | g): each link deepens the
  // tree by one.
  struct Chain {
    Parser& p;
    int links = 0;
    void link() {
      p.enter_count();
      ++links;
    }
    ~Chain() { p.depth_ -= links; }
  };
  void enter_count() {
    if (++depth_ > kMaxDepth)
      fail("blocks or expressions nested more than " + std::to_string(kMaxDepth) + " deep");
  }
  Nesting enter() {
    enter_count();
    return Nesting{depth_};
  }

  [[noreturn]] void fail(const std::string& what) const {
    const Token& at = i_ < t_.size() ? t_[i_] : t_.back();
    throw std::invalid_argument("line " + std::to_string(at.line) + ", column " +
                                std::to_string(at.column) + ": " + what);
  }

  const Token& peek() const {
    if (i_ >= t_.size()) fail("the template ends inside a tag or block");
    return t_[i_];
  }
  bool is(T type) const { return i_ < t_.size() && t_[i_].type == type; }
  bool is_word(std::string_view w, std::size_t ahead = 0) const {
    return i_ + ahead < t_.size() && t_[i_ + ahead].type == T::identifier &&
           t_[i_ + ahead].value == w;
  }
  // `{% word` with word one of those given.
  bool is_statement(std::initializer_list<std::string_view> words) const {
    if (!is(T::open_statement)) return false;
    for (auto w : words)
      if (is_word(w, 1)) return true;
    return false;
  }
  void expect(T type, const char* what) {
    if (!is(type)) fail(std::string("expected ") + what);
    ++i_;
  }
  void expect_word(const char* w) {
    if (!is_word(w)) fail(std::string("expected '") + w + "'");
    ++i_;
  }

  NodePtr node(K kind, const Token& at) const {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->line = at.line;
    n->column = at.column;
    return n;
  }

  // Statements -------------------------------------------------------------------------------

  NodePtr any() {
    const Token& t = peek();
    switch (t.type) {
      case T::comment:
        ++i_;
        return nullptr;
      case T::text: {
        auto n = node(K::text, t);
        n->name = t.value;
        ++i_;
        return n;
      }
      case T::open_statement:
        return statement();
      case T::open_expression: {
        auto n = node(K::output, t);
        ++i_;
        n->a.push_back(expression());
        expect(T::close_expression, "'}}' to close the expression");
        return n;
      }
      default:
        fail("unexpected '" + t.value + "' outside a tag");
    }
  }

  NodePtr statement() {
    const Nesting nesting = enter();
    ++i_;  // {%
    const Token& t = peek();
    if (t.type != T::identifier) fail("expected a statement name after '{%'");
    ++i_;
    if (t.value == "set") return set_statement(t);
    if (t.value == "if") {
      auto n = if_statement(t);
      close_block("endif");
      return n;
    }
    if (t.value == "for") return for_statement(t);
    --i_;
    fail("unsupported statement '" + t.value + "'");
  }

  void close_block(const char* end) {
    expect(T::open_statement, (std::string("'{% ") + end + " %}'").c_str());
    expect_word(end);
    expect(T::close_statement, "'%}'");
  }

  Nodes block_until(std::initializer_list<std::string_view> ends) {
    Nodes body;
    while (!is_statement(ends)) {
      if (i_ >= t_.size())
        fail("the template ends inside a block; expected {% " + std::string(*ends.begin()) + " %}");
      if (auto n = any()) body.push_back(std::move(n));
    }
    return body;
  }

  NodePtr set_statement(const Token& at) {
    auto n = node(K::set, at);
    n->a.push_back(sequence(false));
    if (is(T::equals)) {
      ++i_;
      n->a.push_back(sequence(false));
    } else {
      expect(T::close_statement, "'=' or '%}' in set");
      n->b = block_until({"endset"});
      ++i_;
      expect_word("endset");
    }
    expect(T::close_statement, "'%}' to close set");
    return n;
  }

  NodePtr if_statement(const Token& at) {
    auto n = node(K::if_, at);
    n->a.push_back(expression());
    expect(T::close_statement, "'%}' to close if");
    n->b = block_until({"elif", "else", "endif"});
    if (is_statement({"elif"})) {
      const Token& elif = t_[i_ + 1];
      i_ += 2;
      n->c.push_back(if_statement(elif));
    } else if (is_statement({"else"})) {
      i_ += 2;
      expect(T::close_statement, "'%}' after else");
      n->c = block_until({"endif"});
    }
    return n;
  }

  NodePtr for_statement(const Token& at) {
    auto n = node(K::for_, at);
    n->a.push_back(sequence(true));
    if (n->a[0]->kind != K::name && n->a[0]->kind != K::tuple)
      fail("expected a name or names for the loop variable");
    expect_word("in");
    n->a.push_back(expression());
    // `for x in xs if cond` reads as a ternary without else.
    if (n->a[1]->kind == K::ternary && !n->a[1]->a[2]) {
      const Node& iterable = *n->a[1];
      throw std::invalid_argument("line " + std::to_string(iterable.line) + ", column " +
                                  std::to_string(iterable.column) +
                                  ": unsupported construct: 'for ... if' filter");
    }
    expect(T::close_statement, "'%}' to close for");
    n->b = block_until({"endfor", "else"});
    if (is_statement({"else"})) {
      i_ += 2;
      expect(T::close_statement, "'%}' after else");
      n->c = block_until({"endfor"});
    }
    close_block("endfor");
    return n;
  }

  // Expressions ------------------------------------------------------------------------------

  // `a, b` without brackets is a tuple (the left side of set, loop variables).
  NodePtr sequence(bool primary_only) {
    const Token& at = peek();
    NodePtr first = primary_only ? primary() : expression();
    if (!is(T::comma)) return first;
    auto n = node(K::tuple, at);
    n->a.push_back(std::move(first));
    while (is(T::comma)) {
      ++i_;
      n->a.push_back(primary_only ? primary() : expression());
    }
    return n;
  }

  NodePtr expression() {
    const Nesting nesting = enter();
    const Token& at = peek();
    NodePtr value = binary_left(0);
    if (!is_word("if")) return value;
    ++i_;
    auto n = node(K::ternary, at);
    n->a.push_back(std::move(value));
    n->a.push_back(binary_left(0));
    if (is_word("else")) {
      ++i_;
      n->a.push_back(expression());
    } else {
      n->a.push_back(nullptr);
    }
    return n;
  }

  // Left-associative levels, loosest first: or, and, (not), comparison and membership,
  // + - ~, * / // %, **.
  NodePtr binary_left(int level) {
    if (level == 2) return negation();
    const Token& at = peek();
    NodePtr left = level == 6 ? test_expression() : binary_left(level + 1);
    Chain chain{*this};
    while (true) {
      std::string op;
      if (level == 0 && is_word("or"))
        op = "or";
      else if (level == 1 && is_word("and"))
        op = "and";
      else if (level == 3 && is_word("not") && is_word("in", 1))
        op = "not in";
      else if (level == 3 && is_word("in"))
        op = "in";
      else if ((level == 3 && is(T::comparison)) || (level == 4 && is(T::additive)) ||
               (level == 5 && is(T::multiplicative)) || (level == 6 && is(T::power)))
        op = peek().value;
      else
        break;
      i_ += op == "not in" ? 2 : 1;
      chain.link();
      auto n = node(K::binary, at);
      n->name = op;
      n->a.push_back(std::move(left));
      n->a.push_back(level == 6 ? test_expression() : binary_left(level + 1));
      left = std::move(n);
    }
    return left;
  }

  NodePtr negation() {
    if (!is_word("not")) return binary_left(3);
    const Nesting nesting = enter();
    auto n = node(K::unary, peek());
    ++i_;
    n->name = "not";
    n->a.push_back(negation());
    return n;
  }

  NodePtr test_expression() {
    NodePtr operand = filter_expression();
    Chain chain{*this};
    while (is_word("is")) {
      chain.link();
      auto n = node(K::test, peek());
      ++i_;
      if (is_word("not")) {
        n->negate = true;
        ++i_;
      }
      if (!is(T::identifier)) fail("expected a test name after 'is'");
      n->name = t_[i_++].value;
      if (is(T::open_paren)) fail("unsupported construct: test '" + n->name + "' with arguments");
      n->a.push_back(std::move(operand));
      operand = std::move(n);
    }
    return operand;
  }

  NodePtr filter_expression() {
    NodePtr operand = unary_sign();
    Chain chain{*this};
    while (is(T::pipe)) {
      chain.link();
      auto n = node(K::filter, peek());
      ++i_;
      if (!is(T::identifier)) fail("expected a filter name after '|'");
      n->name = t_[i_++].value;
      n->a.push_back(std::move(operand));
      if (is(T::open_paren)) arguments(*n);
      operand = std::move(n);
    }
    return operand;
  }

  NodePtr unary_sign() {
    const Token& t = peek();
    if ((t.type == T::unary || t.type == T::additive) && (t.value == "-" || t.value == "+")) {
      const Nesting nesting = enter();
      auto n = node(K::unary, t);
      ++i_;
      n->name = t.value;
      n->a.push_back(unary_sign());
      return n;
    }
    return postfix(primary());
  }

  // Positional arguments into b, keyword arguments into keywords/c.
  void arguments(Node& n) {
    expect(T::open_paren, "'('");
    while (!is(T::close_paren)) {
      if (is(T::identifier) && i_ + 1 < t_.size() && t_[i_ + 1].type == T::equals) {
        n.keywords.push_back(t_[i_].value);
        i_ += 2;
        n.c.push_back(expression());
      } else {
        if (!n.keywords.empty()) fail("positional argument after a keyword argument");
        n.b.push_back(expression());
      }
      if (!is(T::comma)) break;
      ++i_;
    }
    expect(T::close_paren, "')' to close the arguments");
  }

  NodePtr postfix(NodePtr object) {
    Chain chain{*this};
    while (is(T::dot) || is(T::open_bracket) || is(T::open_paren)) {
      chain.link();
      const Token& at = peek();
      if (at.type == T::open_paren) {
        auto n = node(K::call, at);
        n->line = object->line;  // errors point at what is called, not at its '('
        n->column = object->column;
        n->a.push_back(std::move(object));
        arguments(*n);
        object = std::move(n);
        continue;
      }
      ++i_;
      if (at.type == T::dot) {
        auto n = node(K::member, at);
        n->a.push_back(std::move(object));
        const Token& p = peek();
        if (p.type != T::identifier && p.type != T::number) fail("expected a name after '.'");
        auto key = node(K::literal, p);
        key->literal =
            p.type == T::number ? Value::of(int64_t(std::stoll(p.value))) : Value::of(p.value);
        ++i_;
        n->a.push_back(std::move(key));
        object = std::move(n);
        continue;
      }
      object = subscript(std::move(object), at);
    }
    return object;
  }

  // After '[': an index or key, or a slice with up to three bounds.
  NodePtr subscript(NodePtr object, const Token& at) {
    Nodes parts;
    bool slice = false;
    while (!is(T::close_bracket)) {
      if (is(T::colon)) {
        parts.push_back(nullptr);
        ++i_;
        slice = true;
      } else {
        parts.push_back(expression());
        if (is(T::colon)) {
          ++i_;
          slice = true;
        }
      }
    }
    ++i_;
    if (parts.empty()) fail("expected an index inside '[]'");
    if (parts.size() > 3) fail("a slice takes at most three bounds");
    auto n = node(slice ? K::slice : K::member, at);
    n->a.push_back(std::move(object));
    for (auto& p : parts) n->a.push_back(std::move(p));
    if (slice) n->a.resize(4);
    return n;
  }

  NodePtr primary() {
    const Token& t = peek();
    ++i_;
    switch (t.type) {
      case T::number:
        return number(t);
      case T::string: {
        auto n = node(K::literal, t);
        std::string s = t.value;
        while (is(T::string)) s += t_[i_++].value;  // adjacent literals concatenate
        n->literal = Value::of(std::move(s));
        return n;
      }
      case T::identifier:
        return name(t);
      case T::open_paren: {
        NodePtr inner = sequence(false);
        expect(T::close_paren, "')'");
        return inner;
      }
      case T::open_bracket: {
        auto n = node(K::list, t);
        while (!is(T::close_bracket)) {
          n->a.push_back(expression());
          if (is(T::comma))
            ++i_;
          else if (!is(T::close_bracket))
            fail("expected ',' or ']' in a list");
        }
        ++i_;
        return n;
      }
      case T::open_brace: {
        auto n = node(K::dict, t);
        while (!is(T::close_brace)) {
          n->a.push_back(expression());
          expect(T::colon, "':' between a key and its value");
          n->b.push_back(expression());
          if (is(T::comma))
            ++i_;
          else if (!is(T::close_brace))
            fail("expected ',' or '}' in a dict");
        }
        ++i_;
        return n;
      }
      default:
        --i_;
        fail("unexpected '" + t.value + "' in an expression");
    }
  }

  NodePtr number(const Token& t) {
    auto n = node(K::literal, t);
    const std::string& s = t.value;
    if (s.find('.') != std::string::npos) {
      n->literal = Value::of(std::stod(s));
    } else {
      int64_t v = 0;
      auto r = std::from_chars(s.data() + (s[0] == '+'), s.data() + s.size(), v);
      if (r.ec != std::errc() || r.ptr != s.data() + s.size())
        fail("integer '" + s + "' is out of range");
      n->literal = Value::of(v);
    }
    return n;
  }

  NodePtr name(const Token& t) {
    auto n = node(K::literal, t);
    if (t.value == "true" || t.value == "True")
      n->literal = Value::of(true);
    else if (t.value == "false" || t.value == "False")
      n->literal = Value::of(false);
    else if (t.value == "none" || t.value == "None")
      n->literal = Value::none();
    else {
      n->kind = K::name;
      n->name = t.value;
    }
    return n;
  }
};

}  // namespace

Nodes parse_template(std::string_view source) {
  return Parser(tokenize(source)).run();
}

}  // namespace remat::jinja

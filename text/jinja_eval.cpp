#include "text/jinja_eval.h"

#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>

#include "text/jinja_builtins.h"

namespace remat::jinja {
namespace {

using K = Node::Kind;
using VK = Value::Kind;

class Scope {
 public:
  explicit Scope(const Scope* parent) : parent_(parent) {}
  const Value* find(const std::string& name) const {
    auto it = vars_.find(name);
    if (it != vars_.end()) return &it->second;
    return parent_ ? parent_->find(name) : nullptr;
  }
  void set(const std::string& name, Value v) { vars_[name] = std::move(v); }

 private:
  const Scope* parent_;
  std::map<std::string, Value> vars_;
};

class Evaluator {
 public:
  std::string block(const Nodes& nodes, Scope& scope) {
    std::string out;
    for (const auto& n : nodes) statement(*n, scope, out);
    return out;
  }

 private:
  void statement(const Node& n, Scope& scope, std::string& out) {
    switch (n.kind) {
      case K::text:
        out += n.name;
        return;
      case K::output:
        out += to_output(eval(*n.a[0], scope));
        return;
      case K::if_:
        out += block(eval(*n.a[0], scope).truthy() ? n.b : n.c, scope);
        return;
      case K::for_:
        return for_loop(n, scope, out);
      case K::set:
        return set(n, scope);
      default:
        out += to_output(eval(n, scope));
    }
  }

  void set(const Node& n, Scope& scope) {
    Value v = n.a.size() > 1 ? eval(*n.a[1], scope) : Value::of(block(n.b, scope));
    const Node& target = *n.a[0];
    if (target.kind == K::name) return scope.set(target.name, std::move(v));
    if (target.kind == K::member && target.a[1]->kind == K::literal) {
      Value object = eval(*target.a[0], scope);
      if (object.kind != VK::names)
        fail(target, "cannot assign an attribute of a " + std::string(kind_name(object.kind)) +
                         "; only of a namespace()");
      return object.assign(to_output(target.a[1]->literal), std::move(v));
    }
    if (target.kind == K::tuple) {
      if (v.kind != VK::list || v.list->size() != target.a.size())
        fail(target, "cannot unpack a " + std::string(kind_name(v.kind)) + " into " +
                         std::to_string(target.a.size()) + " names");
      for (std::size_t i = 0; i < target.a.size(); ++i) {
        if (target.a[i]->kind != K::name) fail(*target.a[i], "can only unpack into names");
        scope.set(target.a[i]->name, (*v.list)[i]);
      }
      return;
    }
    fail(target, "cannot assign to this expression");
  }

  void for_loop(const Node& n, Scope& scope, std::string& out) {
    Value items = eval(*n.a[1], scope);
    List list;
    if (items.kind == VK::list)
      list = *items.list;
    else if (items.kind == VK::dict)
      for (const auto& [k, v] : *items.dict) list.push_back(Value::of(k));
    else
      fail(*n.a[1], std::string("cannot loop over a ") + kind_name(items.kind));
    if (list.empty()) {
      out += block(n.c, scope);
      return;
    }
    // One scope for the whole loop, as the reference has it: a name set in one iteration is
    // still set in the next.
    Scope inner(&scope);
    const int64_t length = int64_t(list.size());
    for (int64_t i = 0; i < length; ++i) {
      const Node& target = *n.a[0];
      if (target.kind == K::name) {
        inner.set(target.name, list[std::size_t(i)]);
      } else {
        const Value& item = list[std::size_t(i)];
        if (item.kind != VK::list || item.list->size() != target.a.size())
          fail(target,
               "cannot unpack a loop item into " + std::to_string(target.a.size()) + " names");
        for (std::size_t k = 0; k < target.a.size(); ++k)
          inner.set(target.a[k]->name, (*item.list)[k]);
      }
      Dict loop = {{"index", Value::of(i + 1)},
                   {"index0", Value::of(i)},
                   {"revindex", Value::of(length - i)},
                   {"revindex0", Value::of(length - i - 1)},
                   {"first", Value::of(i == 0)},
                   {"last", Value::of(i == length - 1)},
                   {"length", Value::of(length)},
                   {"previtem", i > 0 ? list[std::size_t(i - 1)] : Value()},
                   {"nextitem", i + 1 < length ? list[std::size_t(i + 1)] : Value()}};
      inner.set("loop", Value::of(std::move(loop)));
      out += block(n.b, inner);
    }
  }

  Value eval(const Node& n, Scope& scope) {
    switch (n.kind) {
      case K::literal:
        return n.literal;
      case K::name: {
        const Value* v = scope.find(n.name);
        return v ? *v : Value();
      }
      case K::list:
      case K::tuple: {
        List items;
        for (const auto& e : n.a) items.push_back(eval(*e, scope));
        return Value::of(std::move(items));
      }
      case K::dict: {
        Value d = Value::of(Dict{});
        for (std::size_t i = 0; i < n.a.size(); ++i) {
          Value key = eval(*n.a[i], scope);
          if (key.kind != VK::string) fail(*n.a[i], "dict keys must be strings");
          d.assign(key.string, eval(*n.b[i], scope));
        }
        return d;
      }
      case K::unary:
        return unary(n, scope);
      case K::binary:
        return binary(n, scope);
      case K::member:
        return member(n, scope);
      case K::slice:
        return slice(n, scope);
      case K::call:
        return call(n, scope);
      case K::filter: {
        Value operand = eval(*n.a[0], scope);
        return guarded(n, [&] { return apply_filter(n.name, operand, args(n, scope)); });
      }
      case K::test: {
        Value operand = eval(*n.a[0], scope);
        const bool r = guarded(n, [&] { return Value::of(apply_test(n.name, operand)); }).boolean;
        return Value::of(r != n.negate);
      }
      case K::ternary: {
        if (eval(*n.a[1], scope).truthy()) return eval(*n.a[0], scope);
        return n.a[2] ? eval(*n.a[2], scope) : Value();
      }
      default:
        fail(n, "a statement cannot be used as a value");
    }
  }

  Arguments args(const Node& n, Scope& scope) {
    Arguments a;
    for (const auto& e : n.b) a.positional.push_back(eval(*e, scope));
    for (std::size_t i = 0; i < n.c.size(); ++i)
      a.keywords.emplace_back(n.keywords[i], eval(*n.c[i], scope));
    return a;
  }

  template <class F>
  Value guarded(const Node& n, F&& f) {
    try {
      return f();
    } catch (const std::invalid_argument& e) {
      fail(n, e.what());
    }
  }

  Value unary(const Node& n, Scope& scope) {
    Value v = eval(*n.a[0], scope);
    if (n.name == "not") return Value::of(!v.truthy());
    if (v.kind == VK::integer) return Value::of(n.name == "-" ? -v.integer : v.integer);
    if (v.kind == VK::floating) return Value::of(n.name == "-" ? -v.floating : v.floating);
    fail(n, "unary '" + n.name + "' on a " + kind_name(v.kind));
  }

  Value binary(const Node& n, Scope& scope) {
    Value left = eval(*n.a[0], scope);
    if (n.name == "and") return left.truthy() ? eval(*n.a[1], scope) : left;
    if (n.name == "or") return left.truthy() ? left : eval(*n.a[1], scope);
    Value right = eval(*n.a[1], scope);
    return guarded(n, [&] { return binary_operation(n.name, left, right); });
  }

  Value member(const Node& n, Scope& scope) {
    Value object = eval(*n.a[0], scope);
    Value key = eval(*n.a[1], scope);
    return guarded(n, [&] { return item(object, key); });
  }

  Value slice(const Node& n, Scope& scope) {
    Value object = eval(*n.a[0], scope);
    std::optional<int64_t> bounds[3];
    for (int k = 0; k < 3; ++k) {
      if (!n.a[std::size_t(k + 1)]) continue;
      Value b = eval(*n.a[std::size_t(k + 1)], scope);
      if (b.kind != VK::integer) fail(*n.a[std::size_t(k + 1)], "slice bounds must be integers");
      bounds[k] = b.integer;
    }
    return guarded(n, [&] { return slice_of(object, bounds[0], bounds[1], bounds[2]); });
  }

  Value call(const Node& n, Scope& scope) {
    const Node& callee = *n.a[0];
    if (callee.kind == K::member && callee.a[1]->kind == K::literal &&
        callee.a[1]->literal.kind == VK::string) {
      Value object = eval(*callee.a[0], scope);
      const std::string& method = callee.a[1]->literal.string;
      return guarded(n, [&] { return call_method(object, method, args(n, scope)); });
    }
    if (callee.kind == K::name && !scope.find(callee.name)) {
      if (callee.name == "raise_exception") {
        Arguments a = args(n, scope);
        fail(n, "the template raised an error: " +
                    (a.positional.empty() ? std::string() : to_output(a.positional[0])));
      }
      return guarded(n, [&] { return call_global(callee.name, args(n, scope)); });
    }
    fail(
        n,
        "unsupported call: only methods, namespace(), range() and raise_exception() can be called");
  }

  [[noreturn]] static void fail(const Node& n, const std::string& what) {
    throw std::invalid_argument("line " + std::to_string(n.line) + ", column " +
                                std::to_string(n.column) + ": " + what);
  }
};

}  // namespace

std::string render(const Nodes& program, const Dict& variables) {
  Scope globals(nullptr);
  for (const auto& [k, v] : variables) globals.set(k, v);
  return Evaluator().block(program, globals);
}

}  // namespace remat::jinja

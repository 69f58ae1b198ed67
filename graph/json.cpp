#include "graph/json.h"

#include <cstdlib>
#include <stdexcept>

namespace remat {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  JsonValue document() {
    JsonValue v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument("JSON: " + why + " at byte " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  JsonValue value(int depth) {
    if (depth > 64) fail("nesting too deep");
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end");
    JsonValue v;
    const char c = s_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') {
      v.type = JsonValue::Type::string;
      v.string = string();
    } else if (literal("true")) {
      v.type = JsonValue::Type::boolean;
      v.boolean = true;
    } else if (literal("false")) {
      v.type = JsonValue::Type::boolean;
    } else if (literal("null")) {
      v.type = JsonValue::Type::null;
    } else {
      v.type = JsonValue::Type::number;
      v.number = number();
    }
    return v;
  }
  double number() {
    const std::string rest(s_.substr(pos_, 64));
    char* end = nullptr;
    const double d = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str()) fail("expected a value");
    pos_ += static_cast<size_t>(end - rest.c_str());
    return d;
  }
  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\') {
        if (pos_ >= s_.size()) fail("unterminated escape");
        char e = s_[pos_++];
        switch (e) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'r':
            c = '\r';
            break;
          case 'b':
            c = '\b';
            break;
          case 'f':
            c = '\f';
            break;
          case 'u':
            fail("\\u escapes are not supported");
          default:
            c = e;
        }
      }
      out.push_back(c);
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }
  JsonValue array(int depth) {
    ++pos_;
    JsonValue v;
    v.type = JsonValue::Type::array;
    if (eat(']')) return v;
    do v.array.push_back(value(depth + 1));
    while (eat(','));
    expect(']');
    return v;
  }
  JsonValue object(int depth) {
    ++pos_;
    JsonValue v;
    v.type = JsonValue::Type::object;
    if (eat('}')) return v;
    do {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a key string");
      std::string key = string();
      expect(':');
      v.object[key] = value(depth + 1);
    } while (eat(','));
    expect('}');
    return v;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

const JsonValue* JsonValue::find(const std::string& key) const {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &it->second;
}

JsonValue parse_json(std::string_view text) {
  return Parser(text).document();
}

}  // namespace remat

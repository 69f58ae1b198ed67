#include "base/json.h"

#include <charconv>
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
  // JSON's grammar is checked here (from_chars alone would accept "inf", "nan" and "1."), then
  // std::from_chars converts, so the result never depends on the C locale's decimal point.
  double number() {
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (!digits()) {
      fail("expected a value");
    }
    if (peek() == '.') {
      ++pos_;
      if (!digits()) fail("expected a digit after '.'");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!digits()) fail("expected an exponent");
    }
    double d = 0;
    const char* first = s_.data() + start;
    const auto [end, ec] = std::from_chars(first, s_.data() + pos_, d);
    if (ec == std::errc::result_out_of_range) fail("number out of range");
    if (ec != std::errc() || end != s_.data() + pos_) fail("malformed number");
    return d;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool digits() {
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    return pos_ > start;
  }
  unsigned hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned v = 0;
    const auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + pos_ + 4, v, 16);
    if (ec != std::errc() || end != s_.data() + pos_ + 4) fail("malformed \\u escape");
    pos_ += 4;
    return v;
  }
  // After "\u": one escape, or two forming a surrogate pair; a lone surrogate is an error because
  // it has no UTF-8 encoding.
  void unicode_escape(std::string& out) {
    unsigned cp = hex4();
    if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (s_.substr(pos_, 2) != "\\u") fail("high surrogate without its low half");
      pos_ += 2;
      const unsigned low = hex4();
      if (low < 0xDC00 || low > 0xDFFF) fail("high surrogate without its low half");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(out, cp);
  }
  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  // Raw control characters inside a string are kept as they are rather than refused (RFC 8259
  // wants them escaped): safetensors headers written before base/json_writer existed hold tensor
  // names with raw newlines, and those checkpoints must stay loadable.
  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      const char c = s_[pos_++];
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out.push_back(e);
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u':
          unicode_escape(out);
          break;
        default:
          --pos_;
          fail(std::string("unknown escape '\\") + e + "'");
      }
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

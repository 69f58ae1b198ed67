#include "base/json_writer.h"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace remat {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when the byte there does not start
// one (overlong forms, surrogates and code points past U+10FFFF are invalid too).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  std::size_t n = 0;
  unsigned cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  const bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
  if (overlong || surrogate || cp > 0x10FFFF) return 0;
  return n;
}

void append_escaped_control(std::string& out, unsigned char c) {
  switch (c) {
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default: {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 0xF];
    }
  }
}

}  // namespace

std::string json_string(std::string_view utf8) {
  std::string out;
  out.reserve(utf8.size() + 2);
  out += '"';
  for (std::size_t i = 0; i < utf8.size();) {
    const auto c = static_cast<unsigned char>(utf8[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c < 0x20) {
        append_escaped_control(out, c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence_length(utf8, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
    } else {
      out.append(utf8.substr(i, n));
      i += n;
    }
  }
  out += '"';
  return out;
}

std::string json_number(double value) {
  if (!std::isfinite(value))
    throw std::invalid_argument("JSON cannot represent the non-finite number " +
                                std::to_string(value));
  char buf[64];
  // Integers up to 2^53 are exact doubles; printing them in fixed notation keeps byte counts
  // readable (1073741824, not 1.073741824e+09). Larger values take the shortest general form.
  const bool integral = std::fabs(value) <= 9007199254740992.0 && value == std::trunc(value);
  const auto fmt = integral ? std::chars_format::fixed : std::chars_format::general;
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, fmt);
  if (ec != std::errc()) throw std::invalid_argument("json_number: cannot format the number");
  return std::string(buf, end);
}

void JsonWriter::newline_indent(std::size_t depth) {
  if (indent_ <= 0) return;
  out_ += '\n';
  out_.append(depth * static_cast<std::size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (levels_.empty()) {
    if (!out_.empty()) throw std::logic_error("JsonWriter: a second top-level value");
    return;
  }
  Level& level = levels_.back();
  if (level.object) throw std::logic_error("JsonWriter: a value inside an object needs a key");
  if (!level.empty) out_ += ',';
  level.empty = false;
  newline_indent(levels_.size());
}

void JsonWriter::open(char c, bool object) {
  before_value();
  out_ += c;
  levels_.push_back({object});
}

void JsonWriter::close(char c, bool object) {
  if (levels_.empty() || levels_.back().object != object || after_key_)
    throw std::logic_error(std::string("JsonWriter: unbalanced '") + c + "'");
  const bool empty = levels_.back().empty;
  levels_.pop_back();
  if (!empty) newline_indent(levels_.size());
  out_ += c;
}

JsonWriter& JsonWriter::begin_object() {
  open('{', true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  close('}', true);
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  open('[', false);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  close(']', false);
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  if (levels_.empty() || !levels_.back().object || after_key_)
    throw std::logic_error("JsonWriter: a key outside an object");
  Level& level = levels_.back();
  if (!level.empty) out_ += ',';
  level.empty = false;
  newline_indent(levels_.size());
  out_ += json_string(k);
  out_ += indent_ > 0 ? ": " : ":";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  out_ += json_string(s);
  return *this;
}
JsonWriter& JsonWriter::value(double v) {
  std::string text = json_number(v);  // throws before anything is written
  before_value();
  out_ += text;
  return *this;
}
JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}
JsonWriter& JsonWriter::signed_value(std::int64_t v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}
JsonWriter& JsonWriter::unsigned_value(std::uint64_t v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}

}  // namespace remat

#include "text/byte_unicode.h"

#include <array>

namespace remat::text {

namespace {

bool printable_latin1(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct ByteMap {
  std::array<char32_t, 256> to_unicode{};
  std::array<int16_t, 324> to_byte{};  // indexed by code point; -1 where no byte maps there

  ByteMap() {
    to_byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      to_unicode[b] = printable_latin1(b) ? char32_t(b) : next++;
      to_byte[to_unicode[b]] = int16_t(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

}  // namespace

std::size_t decode_utf8(std::string_view text, std::size_t i, char32_t& c) {
  const auto byte = [&](std::size_t k) { return uint8_t(text[i + k]); };
  const uint8_t b0 = byte(0);
  std::size_t len = b0 < 0x80           ? 1
                    : (b0 >> 5) == 0x6  ? 2
                    : (b0 >> 4) == 0xE  ? 3
                    : (b0 >> 3) == 0x1E ? 4
                                        : 0;
  if (len == 0 || i + len > text.size()) return 0;
  c = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (std::size_t k = 1; k < len; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
    c = (c << 6) | (byte(k) & 0x3F);
  }
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (c < kMin[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
  return len;
}

bool is_valid_utf8(std::string_view text) {
  char32_t c = 0;
  for (std::size_t i = 0, len = 0; i < text.size(); i += len)
    if ((len = decode_utf8(text, i, c)) == 0) return false;
  return true;
}

char32_t byte_to_unicode(uint8_t b) {
  return byte_map().to_unicode[b];
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

std::string bytes_to_unicode_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) append_utf8(out, byte_to_unicode(uint8_t(b)));
  return out;
}

std::optional<std::string> unicode_text_to_bytes(std::string_view text) {
  const ByteMap& map = byte_map();
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    char32_t c = 0;
    const std::size_t len = decode_utf8(text, i, c);
    if (len == 0 || c >= map.to_byte.size() || map.to_byte[c] < 0) return std::nullopt;
    out += char(map.to_byte[c]);
    i += len;
  }
  return out;
}

}  // namespace remat::text

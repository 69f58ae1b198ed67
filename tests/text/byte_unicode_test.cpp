#include "text/byte_unicode.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>

using namespace remat::text;

TEST_CASE("GPT-2's byte map is a bijection onto printable characters", "[text]") {
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const char32_t c = byte_to_unicode(uint8_t(b));
    CHECK(seen.insert(c).second);
    CHECK(c > 0x20);
    CHECK(c != 0x7F);
    CHECK(c < 0x144);  // 188 printable Latin-1 bytes keep their code point, 68 go to U+0100..U+0143
  }
  CHECK(byte_to_unicode(' ') == U'Ġ');
  CHECK(byte_to_unicode('\n') == U'Ċ');
  CHECK(byte_to_unicode('a') == U'a');
  CHECK(byte_to_unicode(0xAD) == char32_t(0x143));  // soft hyphen: the last remapped byte
}

TEST_CASE("every byte string spells through the map and back", "[text]") {
  std::string all;
  for (int b = 0; b < 256; ++b) all += char(b);
  const std::string spelled = bytes_to_unicode_text(all);
  CHECK(spelled.size() > all.size());
  CHECK(unicode_text_to_bytes(spelled) == all);
  CHECK(bytes_to_unicode_text(" the\n") == "Ġthe\xC4\x8A");
}

TEST_CASE("spellings outside the map or not UTF-8 are refused", "[text]") {
  CHECK_FALSE(unicode_text_to_bytes("\xE2\x82\xAC").has_value());  // '€' is no byte's character
  CHECK_FALSE(unicode_text_to_bytes(" ").has_value());             // space is spelled 'Ġ'
  CHECK_FALSE(unicode_text_to_bytes("\xC4").has_value());          // truncated UTF-8
  CHECK_FALSE(unicode_text_to_bytes("\xC0\xA1").has_value());      // overlong '!'
  CHECK(unicode_text_to_bytes("") == std::string());
}

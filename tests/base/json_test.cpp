#include "base/json.h"

#include <catch2/catch.hpp>

namespace remat {
namespace {

TEST_CASE("parse_json decodes \\u escapes and surrogate pairs to UTF-8") {
  CHECK(parse_json("\"\\u0041\\u00e9\\u20AC\"").string == "A\xc3\xa9\xe2\x82\xac");
  CHECK(parse_json("\"\\ud83d\\ude00\"").string == "\xf0\x9f\x98\x80");
  CHECK(parse_json("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"").string == "\"\\/\b\f\n\r\t");
}

TEST_CASE("parse_json refuses lone surrogates and bad escapes") {
  CHECK_THROWS_AS(parse_json("\"\\ud83d\""), std::invalid_argument);
  CHECK_THROWS_AS(parse_json("\"\\ud83dx\""), std::invalid_argument);
  CHECK_THROWS_AS(parse_json("\"\\ude00\""), std::invalid_argument);
  CHECK_THROWS_AS(parse_json("\"\\ud83d\\u0041\""), std::invalid_argument);
  CHECK_THROWS_AS(parse_json("\"\\u12\""), std::invalid_argument);
  CHECK_THROWS_AS(parse_json("\"\\x\""), std::invalid_argument);
}

TEST_CASE("parse_json keeps raw control characters that older safetensors headers hold") {
  CHECK(parse_json("\"a\nb\tc\"").string == "a\nb\tc");
}

TEST_CASE("parse_json reads numbers by JSON's grammar") {
  CHECK(parse_json("-0.5e1").number == -5.0);
  CHECK(parse_json("[0, 1E2, 2.5e-3]").array[2].number == 0.0025);
  CHECK(parse_json("1073741824").number == 1073741824.0);
  for (const char* bad : {"+1", "01", "1.", ".5", "1e", "inf", "nan", "-", "0x10", "1e400"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_json(bad), std::invalid_argument);
  }
}

}  // namespace
}  // namespace remat

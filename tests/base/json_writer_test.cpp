#include "base/json_writer.h"

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "base/json.h"

namespace remat {
namespace {

double round_trip(double v) {
  const JsonValue parsed = parse_json(json_number(v));
  REQUIRE(parsed.type == JsonValue::Type::number);
  return parsed.number;
}

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

std::string read_back(std::string_view s) {
  const JsonValue parsed = parse_json(json_string(s));
  REQUIRE(parsed.type == JsonValue::Type::string);
  return parsed.string;
}

TEST_CASE("json_number round-trips random doubles bit for bit") {
  std::mt19937_64 rng(20261123);
  for (int i = 0; i < 100000; ++i) {
    const double v = std::bit_cast<double>(rng());
    if (!std::isfinite(v)) continue;
    const double back = round_trip(v);
    INFO(json_number(v));
    REQUIRE(same_bits(back, v));
  }
}

TEST_CASE("json_number round-trips edge values and prints integers plainly") {
  const double values[] = {0.1,
                           1e300,
                           -1e300,
                           -0.0,
                           0.0,
                           9007199254740992.0,
                           std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::min() / 3,
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::lowest(),
                           1.0 / 3};
  for (double v : values) {
    INFO(json_number(v));
    CHECK(same_bits(round_trip(v), v));
  }
  CHECK(json_number(1073741824.0) == "1073741824");
  CHECK(json_number(9007199254740992.0) == "9007199254740992");
  CHECK(json_number(-3.0) == "-3");
  CHECK(json_number(0.1) == "0.1");
  CHECK(json_number(-0.0) == "-0");
}

TEST_CASE("json_number refuses NaN and infinity") {
  CHECK_THROWS_AS(json_number(std::nan("")), std::invalid_argument);
  CHECK_THROWS_AS(json_number(std::numeric_limits<double>::infinity()), std::invalid_argument);
  CHECK_THROWS_AS(json_number(-std::numeric_limits<double>::infinity()), std::invalid_argument);
}

TEST_CASE("json_string escapes quotes, backslashes and every control character") {
  CHECK(json_string("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(json_string("\b\f\n\r\t") == "\"\\b\\f\\n\\r\\t\"");
  CHECK(json_string(std::string_view("\0\x01\x1f", 3)) == "\"\\u0000\\u0001\\u001f\"");
  CHECK(json_string("\x7f") == "\"\x7f\"");
  std::string all;
  for (int c = 0; c < 0x80; ++c) all += static_cast<char>(c);
  CHECK(read_back(all) == all);
}

TEST_CASE("json_string passes valid UTF-8 and replaces invalid bytes with U+FFFD") {
  const std::string emoji = "caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x82\xac";  // café 😀 €
  CHECK(json_string(emoji) == "\"" + emoji + "\"");
  CHECK(read_back(emoji) == emoji);
  const std::string replacement = "\xef\xbf\xbd";
  CHECK(read_back("a\xff"
                  "b") == "a" + replacement + "b");
  CHECK(read_back("\xc3") == replacement);                                      // truncated
  CHECK(read_back("\xc0\xaf") == replacement + replacement);                    // overlong '/'
  CHECK(read_back("\xed\xa0\x80") == replacement + replacement + replacement);  // surrogate
  CHECK(read_back("\xf4\x90\x80\x80").find("\xf4") == std::string::npos);       // past U+10FFFF
}

TEST_CASE("JsonWriter writes nested compact and pretty documents the reader accepts") {
  JsonWriter j;
  j.begin_object()
      .field("name", "x\"y")
      .field("bytes", std::uint64_t{1} << 40)
      .field("delta", -7)
      .field("ratio", 0.25)
      .field("ok", true);
  j.key("none").null();
  j.key("list").begin_array().value(1).value("two").begin_object().end_object().end_array();
  j.end_object();
  CHECK(j.str() ==
        "{\"name\":\"x\\\"y\",\"bytes\":1099511627776,\"delta\":-7,\"ratio\":0.25,\"ok\":true,"
        "\"none\":null,\"list\":[1,\"two\",{}]}");
  const JsonValue v = parse_json(j.str());
  CHECK(v.find("bytes")->number == 1099511627776.0);
  CHECK(v.find("list")->array.size() == 3);

  JsonWriter pretty(2);
  pretty.begin_object().field("a", 1);
  pretty.key("b").begin_array().value(2).end_array();
  pretty.end_object();
  CHECK(pretty.str() == "{\n  \"a\": 1,\n  \"b\": [\n    2\n  ]\n}");
}

TEST_CASE("JsonWriter refuses misuse instead of writing invalid JSON") {
  JsonWriter j;
  j.begin_object();
  CHECK_THROWS_AS(j.value(1), std::logic_error);
  CHECK_THROWS_AS(j.end_array(), std::logic_error);
  JsonWriter k;
  k.begin_array();
  CHECK_THROWS_AS(k.key("a"), std::logic_error);
  CHECK_THROWS_AS(k.value(std::nan("")), std::invalid_argument);
  k.end_array();
  CHECK(k.str() == "[]");
}

}  // namespace
}  // namespace remat

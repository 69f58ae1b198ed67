// Typed config.json keys: values read as given, every wrong one refused in one line that names
// the key (with the object it sits in) and the value.
#include "formats/hf_config_keys.h"

#include <catch2/catch.hpp>
#include <stdexcept>

using namespace remat;

TEST_CASE("config keys read their values and refuse wrong ones naming key and value",
          "[hf_config_keys]") {
  const JsonValue doc = parse_json(
      R"({"n": 3, "x": 2.5, "b": true, "s": "silu", "z": null, "o": {"rope_theta": 0}})");
  const ConfigKeys k(doc);
  CHECK(k.positive_int("n") == 3);
  CHECK(k.number("x") == 2.5);
  CHECK(k.boolean("b", false));
  CHECK(k.string("s", "") == "silu");
  CHECK(k.given("z") == nullptr);  // null is "not given"
  CHECK_FALSE(k.positive_int("absent").has_value());
  CHECK(k.string("absent", "default") == "default");
  CHECK_THROWS_WITH(k.positive_int("x"), "x is 2.5; it must be a positive integer");
  CHECK_THROWS_WITH(k.required_int("absent"), "config.json has no 'absent' (a positive integer)");
  CHECK_THROWS_WITH(k.boolean("s", false), R"(s is "silu"; it must be true or false)");
  CHECK_THROWS_WITH(k.require_bool("b", false, false, "no"), "b is true; no");
  // Inside an object, messages name the object too.
  const ConfigKeys inner(*doc.find("o"), "rope_parameters");
  CHECK(inner.name("factor") == "rope_parameters.factor");
  CHECK_THROWS_WITH(inner.number("rope_theta"),
                    "rope_parameters.rope_theta is 0; it must be above 0");
  CHECK(json_text(*doc.find("o")) == R"({"rope_theta":0})");
}

TEST_CASE("floats are written as their shortest decimal", "[hf_config_keys]") {
  CHECK(shortest_decimal(1e-5f) == 1e-05);
  CHECK(shortest_decimal(12345.5f) == 12345.5);
  CHECK(shortest_decimal(0.1f) == 0.1);
  CHECK(static_cast<double>(0.1f) != 0.1);  // what the helper is for
}

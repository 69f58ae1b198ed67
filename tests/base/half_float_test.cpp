#include "base/half_float.h"

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>

using namespace remat;

TEST_CASE("every f16 and bf16 value widens and narrows back to itself") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_float(uint16_t(h));
    const float b = bf16_to_float(uint16_t(h));
    if (std::isnan(f)) {
      CHECK(std::isnan(f16_to_float(float_to_f16(f))));
    } else {
      INFO("f16 " << h);
      REQUIRE(float_to_f16(f) == h);
    }
    if (std::isnan(b)) {
      CHECK(std::isnan(bf16_to_float(float_to_bf16(b))));
    } else {
      INFO("bf16 " << h);
      REQUIRE(float_to_bf16(b) == h);
    }
  }
}

TEST_CASE("narrowing rounds to nearest, ties to even") {
  // bf16 keeps 8 significant bits: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 -> 1 (even).
  CHECK(float_to_bf16(1.0f + 0x1p-8f) == float_to_bf16(1.0f));
  CHECK(float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == float_to_bf16(1.0f + 0x1p-7f));
  CHECK(float_to_bf16(1.0f + 3 * 0x1p-8f) == float_to_bf16(1.0f + 0x1p-6f));  // tie up to even
  // f16 keeps 11: 1 + 2^-11 ties to 1; 1 + 3·2^-11 ties up to 1 + 2^-9.
  CHECK(float_to_f16(1.0f + 0x1p-11f) == 0x3C00);
  CHECK(float_to_f16(1.0f + 3 * 0x1p-11f) == 0x3C02);
  CHECK(float_to_f16(65504.0f) == 0x7BFF);
  CHECK(float_to_f16(65519.0f) == 0x7BFF);
  CHECK(float_to_f16(65520.0f) == 0x7C00);
  CHECK(float_to_f16(-1e9f) == 0xFC00);
  CHECK(float_to_f16(0x1p-24f) == 0x0001);
  CHECK(float_to_f16(0x1p-25f) == 0x0000);                            // tie to even: zero
  CHECK(float_to_f16(0x1p-25f + 0x1p-40f) == 0x0001);                 // above the tie
  CHECK(float_to_f16(3 * 0x1p-25f) == 0x0002);                        // tie to even: 2
  CHECK(float_to_f16(0x1p-14f - 0x1p-30f) == 0x0400);                 // rounds up into the normals
  CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7F80);  // rounds to infinity
  CHECK(std::isnan(f16_to_float(float_to_f16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("narrowing matches the nearest representable value on a sweep of floats") {
  // Independent check: the chosen 16-bit value is at least as close as both neighbours.
  uint32_t state = 12345;
  for (int n = 0; n < 200000; ++n) {
    state = state * 1664525u + 1013904223u;
    const float x =
        std::bit_cast<float>((state & 0x8FFFFFFFu) | 0x30000000u);  // |x| in [2^-31, 2^2)
    const uint16_t h = float_to_f16(x), b = float_to_bf16(x);
    const double e = std::fabs(double(f16_to_float(h)) - x);
    const double eb = std::fabs(double(bf16_to_float(b)) - x);
    for (int d : {-1, 1}) {
      const uint16_t hn = uint16_t(h + d), bn = uint16_t(b + d);
      if ((hn & 0x7FFF) < 0x7C00 && (hn ^ h) < 0x8000)
        REQUIRE(e <= std::fabs(double(f16_to_float(hn)) - x));
      if ((bn ^ b) < 0x8000) REQUIRE(eb <= std::fabs(double(bf16_to_float(bn)) - x));
    }
  }
}

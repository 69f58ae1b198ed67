#include "base/half_float.h"

#include <bit>
#include <cmath>

namespace remat {

float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t man = h & 0x3FF;
  if (exp == 0) {
    const float f = std::ldexp(float(man), -24);  // zero or subnormal, exact
    return sign ? -f : f;
  }
  const uint32_t bits =
      exp == 31 ? sign | 0x7F800000u | (man << 13) : sign | ((exp + 112) << 23) | (man << 13);
  return std::bit_cast<float>(bits);
}

float bf16_to_float(uint16_t b) {
  return std::bit_cast<float>(uint32_t(b) << 16);
}

uint16_t float_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return uint16_t((bits >> 16) | 0x40);  // stays a (quiet) NaN
  // Adding 0x7FFF plus the lowest kept bit rounds to nearest with ties to even; a carry into the
  // exponent is the correct rounding up (to the next binade or to infinity).
  return uint16_t((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

uint16_t float_to_f16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return uint16_t(sign | 0x7E00u);   // NaN
  if (abs >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {
    // Below the smallest normal (2^-14): a subnormal multiple of 2^-24. Scaling by 2^24 is exact
    // and nearbyint rounds ties to even in the default rounding mode.
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;
    return uint16_t(sign | uint16_t(std::nearbyint(scaled)));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits.
  const uint32_t rebased = abs - (112u << 23);
  const uint32_t rounded = rebased + 0xFFFu + ((rebased >> 13) & 1u);
  return uint16_t(sign | uint16_t(rounded >> 13));
}

}  // namespace remat

// Random block bytes for the GGUF block decoder tests: every byte random, then each f16 scale
// field (d, m, dmin) made finite, so the blocks hold codes and scale combinations ggml's quantizer
// rarely or never writes (zero, subnormal and negative scales, 6-bit scales at both ends).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "formats/gguf_types.h"

namespace remat::test {

// The byte offsets of a block's f16 fields (ggml-common.h).
inline std::vector<uint32_t> f16_field_offsets(GgmlType t) {
  switch (t) {
    case GgmlType::q8_0:
    case GgmlType::q4_0:
    case GgmlType::q5_0:
      return {0};
    case GgmlType::q4_1:
    case GgmlType::q5_1:
    case GgmlType::q4_k:
    case GgmlType::q5_k:
      return {0, 2};
    case GgmlType::q2_k:
      return {80, 82};
    case GgmlType::q3_k:
      return {108};
    case GgmlType::q6_k:
      return {208};
    default:
      return {};
  }
}

// A random finite f16: one in eight is ±0 or subnormal, the rest any finite exponent.
inline uint16_t random_finite_f16(std::mt19937& rng) {
  uint16_t h = uint16_t(rng());
  if (rng() % 8 == 0) return uint16_t(h & 0x83FFu);  // exponent 0: ±0 or subnormal
  const uint16_t exponent = uint16_t(rng() % 31);    // 0..30, never infinity or NaN
  return uint16_t((h & 0x83FFu) | exponent << 10);
}

// `count` random blocks of a quantized type `t`, scales finite.
inline std::vector<std::byte> random_blocks(GgmlType t, size_t count, std::mt19937& rng) {
  const GgmlTypeInfo& info = ggml_type_info(t);
  std::vector<std::byte> bytes(count * info.block_bytes);
  for (std::byte& b : bytes) b = std::byte(rng() & 0xFFu);
  for (size_t block = 0; block < count; ++block) {
    for (uint32_t offset : f16_field_offsets(t)) {
      const uint16_t h = random_finite_f16(rng);
      bytes[block * info.block_bytes + offset] = std::byte(h & 0xFFu);
      bytes[block * info.block_bytes + offset + 1] = std::byte(h >> 8);
    }
  }
  return bytes;
}

// The types decode_blocks handles, float types first.
inline const std::vector<GgmlType>& decodable_types() {
  static const std::vector<GgmlType> types = {
      GgmlType::f32,  GgmlType::f16,  GgmlType::bf16, GgmlType::q8_0, GgmlType::q4_0,
      GgmlType::q4_1, GgmlType::q5_0, GgmlType::q5_1, GgmlType::q2_k, GgmlType::q3_k,
      GgmlType::q4_k, GgmlType::q5_k, GgmlType::q6_k};
  return types;
}

}  // namespace remat::test

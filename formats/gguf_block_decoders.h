// The per-type decoders behind decode_blocks and decode_block_value (formats/gguf_blocks.h, which
// documents the layouts and formulas): the float types and 32-value blocks in gguf_blocks.cpp,
// the K-quants in gguf_kblocks.cpp. Internal to those two files; use gguf_blocks.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace remat::gguf_blocks {

inline uint16_t load_u16(const std::byte* p) {
  return uint16_t(uint16_t(p[0]) | uint16_t(p[1]) << 8);
}

inline uint32_t load_u32(const std::byte* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

inline uint8_t u8(std::byte b) {
  return uint8_t(b);
}

// Bulk decoders: `blocks` whole blocks from `in` to `out` (blocks * values-per-block floats).
void decode_q2_k(const std::byte* in, size_t blocks, float* out);
void decode_q3_k(const std::byte* in, size_t blocks, float* out);
void decode_q4_k(const std::byte* in, size_t blocks, float* out);
void decode_q5_k(const std::byte* in, size_t blocks, float* out);
void decode_q6_k(const std::byte* in, size_t blocks, float* out);

// Value e (0..255) of the one block at `block`.
float value_q2_k(const std::byte* block, uint32_t e);
float value_q3_k(const std::byte* block, uint32_t e);
float value_q4_k(const std::byte* block, uint32_t e);
float value_q5_k(const std::byte* block, uint32_t e);
float value_q6_k(const std::byte* block, uint32_t e);

}  // namespace remat::gguf_blocks

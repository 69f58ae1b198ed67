// decode_blocks and decode_block_value: checks and dispatch, the float types (F32, F16, BF16) and
// the 32-value blocks (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) in the arithmetic order of ggml's
// dequantize_row_*; the K-quants are in gguf_kblocks.cpp. Layouts and formulas: gguf_blocks.h.
#include "formats/gguf_blocks.h"

#include <array>
#include <bit>
#include <stdexcept>
#include <string>

#include "formats/gguf_block_decoders.h"

namespace remat {

float gguf_f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) {
    // Infinity, or a NaN that comes out quiet (bit 22 set) as from ggml's conversion, which
    // passes it through a float multiplication.
    const uint32_t quiet = mantissa != 0 ? 0x00400000u : 0u;
    return std::bit_cast<float>(sign | 0x7F800000u | mantissa << 13 | quiet);
  }
  if (exponent != 0) return std::bit_cast<float>(sign | (exponent + 112) << 23 | mantissa << 13);
  // Zero or subnormal: mantissa * 2^-24, exact (a normal float32 or zero).
  return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(float(mantissa) * 0x1p-24f));
}

namespace gguf_blocks {
namespace {

float f16_at(const std::byte* p) {
  return gguf_f16_to_float(load_u16(p));
}

// --- float types: one value a block.

void decode_f32(const std::byte* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = std::bit_cast<float>(load_u32(in + 4 * i));
}
float value_f32(const std::byte* block, uint32_t) {
  return std::bit_cast<float>(load_u32(block));
}

void decode_f16(const std::byte* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = f16_at(in + 2 * i);
}
float value_f16(const std::byte* block, uint32_t) {
  return f16_at(block);
}

float bf16_at(const std::byte* p) {
  return std::bit_cast<float>(uint32_t(load_u16(p)) << 16);
}

void decode_bf16(const std::byte* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = bf16_at(in + 2 * i);
}
float value_bf16(const std::byte* block, uint32_t) {
  return bf16_at(block);
}

// --- 32-value blocks. Value j of the 16 low nibbles and value j + 16 of the high ones share
// byte qs[j].

// The 4-bit code of value e from the 16 bytes at qs.
uint32_t nibble(const std::byte* qs, uint32_t e) {
  return e < 16 ? u8(qs[e]) & 15u : u8(qs[e - 16]) >> 4;
}

void decode_q8_0(const std::byte* in, size_t blocks, float* y) {
  for (size_t b = 0; b < blocks; ++b, in += 34, y += 32) {
    const float d = f16_at(in);
    for (int j = 0; j < 32; ++j) y[j] = float(int8_t(u8(in[2 + j]))) * d;
  }
}
float value_q8_0(const std::byte* block, uint32_t e) {
  return float(int8_t(u8(block[2 + e]))) * f16_at(block);
}

void decode_q4_0(const std::byte* in, size_t blocks, float* y) {
  for (size_t b = 0; b < blocks; ++b, in += 18, y += 32) {
    const float d = f16_at(in);
    const std::byte* qs = in + 2;
    for (int j = 0; j < 16; ++j) {
      y[j] = float(int(u8(qs[j]) & 15) - 8) * d;
      y[j + 16] = float(int(u8(qs[j]) >> 4) - 8) * d;
    }
  }
}
float value_q4_0(const std::byte* block, uint32_t e) {
  return float(int(nibble(block + 2, e)) - 8) * f16_at(block);
}

void decode_q4_1(const std::byte* in, size_t blocks, float* y) {
  for (size_t b = 0; b < blocks; ++b, in += 20, y += 32) {
    const float d = f16_at(in);
    const float m = f16_at(in + 2);
    const std::byte* qs = in + 4;
    for (int j = 0; j < 16; ++j) {
      y[j] = float(u8(qs[j]) & 15) * d + m;
      y[j + 16] = float(u8(qs[j]) >> 4) * d + m;
    }
  }
}
float value_q4_1(const std::byte* block, uint32_t e) {
  return float(nibble(block + 4, e)) * f16_at(block) + f16_at(block + 2);
}

// The 5-bit code of value e: its nibble from qs and bit e of qh as bit 4.
uint32_t five_bits(const std::byte* qh, const std::byte* qs, uint32_t e) {
  return nibble(qs, e) | ((load_u32(qh) >> e) & 1u) << 4;
}

void decode_q5_0(const std::byte* in, size_t blocks, float* y) {
  for (size_t b = 0; b < blocks; ++b, in += 22, y += 32) {
    const float d = f16_at(in);
    const uint32_t qh = load_u32(in + 2);
    const std::byte* qs = in + 6;
    for (int j = 0; j < 16; ++j) {
      const int x0 = int((u8(qs[j]) & 15u) | ((qh >> j) & 1u) << 4) - 16;
      const int x1 = int((u8(qs[j]) >> 4) | ((qh >> (j + 16)) & 1u) << 4) - 16;
      y[j] = float(x0) * d;
      y[j + 16] = float(x1) * d;
    }
  }
}
float value_q5_0(const std::byte* block, uint32_t e) {
  return float(int(five_bits(block + 2, block + 6, e)) - 16) * f16_at(block);
}

void decode_q5_1(const std::byte* in, size_t blocks, float* y) {
  for (size_t b = 0; b < blocks; ++b, in += 24, y += 32) {
    const float d = f16_at(in);
    const float m = f16_at(in + 2);
    const uint32_t qh = load_u32(in + 4);
    const std::byte* qs = in + 8;
    for (int j = 0; j < 16; ++j) {
      const uint32_t x0 = (u8(qs[j]) & 15u) | ((qh >> j) & 1u) << 4;
      const uint32_t x1 = (u8(qs[j]) >> 4) | ((qh >> (j + 16)) & 1u) << 4;
      y[j] = float(x0) * d + m;
      y[j + 16] = float(x1) * d + m;
    }
  }
}
float value_q5_1(const std::byte* block, uint32_t e) {
  return float(five_bits(block + 4, block + 8, e)) * f16_at(block) + f16_at(block + 2);
}

struct Decoder {
  GgmlType type;
  void (*bulk)(const std::byte* in, size_t blocks, float* out);
  float (*value)(const std::byte* block, uint32_t e);
};

constexpr std::array kDecoders = {
    Decoder{GgmlType::f32, decode_f32, value_f32},
    Decoder{GgmlType::f16, decode_f16, value_f16},
    Decoder{GgmlType::bf16, decode_bf16, value_bf16},
    Decoder{GgmlType::q8_0, decode_q8_0, value_q8_0},
    Decoder{GgmlType::q4_0, decode_q4_0, value_q4_0},
    Decoder{GgmlType::q4_1, decode_q4_1, value_q4_1},
    Decoder{GgmlType::q5_0, decode_q5_0, value_q5_0},
    Decoder{GgmlType::q5_1, decode_q5_1, value_q5_1},
    Decoder{GgmlType::q2_k, decode_q2_k, value_q2_k},
    Decoder{GgmlType::q3_k, decode_q3_k, value_q3_k},
    Decoder{GgmlType::q4_k, decode_q4_k, value_q4_k},
    Decoder{GgmlType::q5_k, decode_q5_k, value_q5_k},
    Decoder{GgmlType::q6_k, decode_q6_k, value_q6_k},
};

std::string decodable_names() {
  std::string names;
  for (const Decoder& d : kDecoders) {
    if (!names.empty()) names += ", ";
    names += ggml_type_info(d.type).name;
  }
  return names;
}

// The type's facts and decoder; std::invalid_argument naming the type when there is none.
std::pair<const GgmlTypeInfo*, const Decoder*> decoder_for(GgmlType t, const char* caller) {
  const uint32_t id = static_cast<uint32_t>(t);
  if (!ggml_type_info(id))
    throw std::invalid_argument(std::string(caller) + ": " + std::to_string(id) +
                                " is not a ggml type id");
  const GgmlTypeInfo& info = ggml_type_info(t);
  for (const Decoder& d : kDecoders)
    if (d.type == t) return {&info, &d};
  throw std::invalid_argument(std::string(caller) + ": remat does not decode ggml type " +
                              std::string(info.name) + " (it decodes " + decodable_names() + ")");
}

}  // namespace
}  // namespace gguf_blocks

void decode_blocks(GgmlType t, std::span<const std::byte> blocks, std::span<float> out) {
  const auto [info, decoder] = gguf_blocks::decoder_for(t, "decode_blocks");
  const std::string name(info->name);
  if (out.size() % info->block_values != 0)
    throw std::invalid_argument("decode_blocks: " + std::to_string(out.size()) +
                                " values are not whole blocks of " + name + " (" +
                                std::to_string(info->block_values) + " values a block)");
  const size_t count = out.size() / info->block_values;
  if (blocks.size() != count * info->block_bytes)
    throw std::invalid_argument("decode_blocks: " + std::to_string(out.size()) + " " + name +
                                " values take " + std::to_string(count * info->block_bytes) +
                                " bytes, got " + std::to_string(blocks.size()));
  decoder->bulk(blocks.data(), count, out.data());
}

float decode_block_value(GgmlType t, std::span<const std::byte> block, uint32_t e) {
  const auto [info, decoder] = gguf_blocks::decoder_for(t, "decode_block_value");
  const std::string name(info->name);
  if (block.size() != info->block_bytes)
    throw std::invalid_argument("decode_block_value: a " + name + " block is " +
                                std::to_string(info->block_bytes) + " bytes, got " +
                                std::to_string(block.size()));
  if (e >= info->block_values)
    throw std::invalid_argument("decode_block_value: value " + std::to_string(e) + " of a " + name +
                                " block of " + std::to_string(info->block_values));
  return decoder->value(block.data(), e);
}

}  // namespace remat

// The K-quant decoders (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K: 256-value super-blocks of 16- or 32-value
// sub-blocks with their own scales) in the arithmetic order of ggml's dequantize_row_*, and the
// per-value forms a GPU thread computes. Layouts and formulas: gguf_blocks.h.
#include "formats/gguf_block_decoders.h"
#include "formats/gguf_blocks.h"

namespace remat {

namespace {

using gguf_blocks::u8;

KScaleMin scale_min_at(const std::byte* s, uint32_t j) {
  if (j < 4) return {uint8_t(u8(s[j]) & 63u), uint8_t(u8(s[j + 4]) & 63u)};
  return {uint8_t((u8(s[j + 4]) & 15u) | (u8(s[j - 4]) >> 6) << 4),
          uint8_t((u8(s[j + 4]) >> 4) | (u8(s[j]) >> 6) << 4)};
}

uint8_t q3_scale_at(const std::byte* s, uint32_t j) {
  const uint32_t low = j < 8 ? u8(s[j]) & 15u : u8(s[j - 8]) >> 4;
  const uint32_t high = (u8(s[8 + j % 4]) >> (2 * (j / 4))) & 3u;
  return uint8_t(low | high << 4);
}

}  // namespace

KScaleMin q4k_scale_min(std::span<const std::byte, 12> scales, uint32_t j) {
  return scale_min_at(scales.data(), j);
}

uint8_t q3k_scale(std::span<const std::byte, 12> scales, uint32_t j) {
  return q3_scale_at(scales.data(), j);
}

namespace gguf_blocks {
namespace {

float f16_at(const std::byte* p) {
  return gguf_f16_to_float(load_u16(p));
}

}  // namespace

// Q2_K: u8 scales[16] @0, u8 qs[64] @16, f16 d @80, f16 dmin @82.
void decode_q2_k(const std::byte* in, size_t blocks, float* y) {
  for (size_t b = 0; b < blocks; ++b, in += 84) {
    const float d = f16_at(in + 80);
    const float min = f16_at(in + 82);
    const std::byte* q = in + 16;
    uint32_t is = 0;
    for (int n = 0; n < 256; n += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int half = 0; half < 32; half += 16) {
          const uint32_t sc = u8(in[is++]);
          const float dl = d * float(sc & 15u);
          const float ml = min * float(sc >> 4);
          for (int l = 0; l < 16; ++l) *y++ = dl * float((u8(q[half + l]) >> shift) & 3u) - ml;
        }
      }
    }
  }
}
float value_q2_k(const std::byte* block, uint32_t e) {
  const uint32_t sc = u8(block[e / 16]);
  const uint32_t q = (u8(block[16 + 32 * (e / 128) + e % 32]) >> (2 * ((e % 128) / 32))) & 3u;
  const float dl = f16_at(block + 80) * float(sc & 15u);
  const float ml = f16_at(block + 82) * float(sc >> 4);
  return dl * float(q) - ml;
}

// Q3_K: u8 hmask[32] @0, u8 qs[64] @32, u8 scales[12] @96, f16 d @108.
void decode_q3_k(const std::byte* in, size_t blocks, float* y) {
  for (size_t b = 0; b < blocks; ++b, in += 110) {
    const float d = f16_at(in + 108);
    const std::byte* hm = in;
    const std::byte* q = in + 32;
    uint32_t is = 0;
    uint32_t m = 1;
    for (int n = 0; n < 256; n += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
        for (int half = 0; half < 32; half += 16) {
          const float dl = d * float(int(q3_scale_at(in + 96, is++)) - 32);
          for (int l = 0; l < 16; ++l) {
            const int low = int((u8(q[half + l]) >> shift) & 3u);
            *y++ = dl * float(low - ((u8(hm[half + l]) & m) ? 0 : 4));
          }
        }
      }
    }
  }
}
float value_q3_k(const std::byte* block, uint32_t e) {
  const uint32_t g = 4 * (e / 128) + (e % 128) / 32;
  const int low = int((u8(block[32 + 32 * (e / 128) + e % 32]) >> (2 * (g % 4))) & 3u);
  const int q = low - (((u8(block[e % 32]) >> g) & 1u) ? 0 : 4);
  const float dl = f16_at(block + 108) * float(int(q3_scale_at(block + 96, e / 16)) - 32);
  return dl * float(q);
}

// Q4_K: f16 d @0, f16 dmin @2, u8 scales[12] @4, u8 qs[128] @16.
void decode_q4_k(const std::byte* in, size_t blocks, float* y) {
  for (size_t b = 0; b < blocks; ++b, in += 144) {
    const float d = f16_at(in);
    const float min = f16_at(in + 2);
    const std::byte* q = in + 16;
    for (uint32_t is = 0; is < 8; is += 2, q += 32) {
      const KScaleMin a = scale_min_at(in + 4, is);
      const KScaleMin c = scale_min_at(in + 4, is + 1);
      const float d1 = d * float(a.scale);
      const float m1 = min * float(a.min);
      const float d2 = d * float(c.scale);
      const float m2 = min * float(c.min);
      for (int l = 0; l < 32; ++l) *y++ = d1 * float(u8(q[l]) & 15u) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * float(u8(q[l]) >> 4) - m2;
    }
  }
}
float value_q4_k(const std::byte* block, uint32_t e) {
  const KScaleMin sm = scale_min_at(block + 4, e / 32);
  const uint32_t q = (u8(block[16 + 32 * (e / 64) + e % 32]) >> (4 * ((e / 32) % 2))) & 15u;
  const float d1 = f16_at(block) * float(sm.scale);
  const float m1 = f16_at(block + 2) * float(sm.min);
  return d1 * float(q) - m1;
}

// Q5_K: f16 d @0, f16 dmin @2, u8 scales[12] @4, u8 qh[32] @16, u8 qs[128] @48.
void decode_q5_k(const std::byte* in, size_t blocks, float* y) {
  for (size_t b = 0; b < blocks; ++b, in += 176) {
    const float d = f16_at(in);
    const float min = f16_at(in + 2);
    const std::byte* qh = in + 16;
    const std::byte* ql = in + 48;
    uint32_t u1 = 1;
    uint32_t u2 = 2;
    for (uint32_t is = 0; is < 8; is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
      const KScaleMin a = scale_min_at(in + 4, is);
      const KScaleMin c = scale_min_at(in + 4, is + 1);
      const float d1 = d * float(a.scale);
      const float m1 = min * float(a.min);
      const float d2 = d * float(c.scale);
      const float m2 = min * float(c.min);
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * float((u8(ql[l]) & 15u) + ((u8(qh[l]) & u1) ? 16u : 0u)) - m1;
      for (int l = 0; l < 32; ++l)
        *y++ = d2 * float((u8(ql[l]) >> 4) + ((u8(qh[l]) & u2) ? 16u : 0u)) - m2;
    }
  }
}
float value_q5_k(const std::byte* block, uint32_t e) {
  const KScaleMin sm = scale_min_at(block + 4, e / 32);
  const uint32_t low = (u8(block[48 + 32 * (e / 64) + e % 32]) >> (4 * ((e / 32) % 2))) & 15u;
  const uint32_t q = low + 16 * ((u8(block[16 + e % 32]) >> (e / 32)) & 1u);
  const float d1 = f16_at(block) * float(sm.scale);
  const float m1 = f16_at(block + 2) * float(sm.min);
  return d1 * float(q) - m1;
}

// Q6_K: u8 ql[128] @0, u8 qh[64] @128, int8 scales[16] @192, f16 d @208.
void decode_q6_k(const std::byte* in, size_t blocks, float* y) {
  for (size_t b = 0; b < blocks; ++b, in += 210) {
    const float d = f16_at(in + 208);
    const std::byte* ql = in;
    const std::byte* qh = in + 128;
    const std::byte* sc = in + 192;
    for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const uint32_t h = u8(qh[l]);
        const int q1 = int((u8(ql[l]) & 15u) | ((h >> 0) & 3u) << 4) - 32;
        const int q2 = int((u8(ql[l + 32]) & 15u) | ((h >> 2) & 3u) << 4) - 32;
        const int q3 = int((u8(ql[l]) >> 4) | ((h >> 4) & 3u) << 4) - 32;
        const int q4 = int((u8(ql[l + 32]) >> 4) | ((h >> 6) & 3u) << 4) - 32;
        y[l + 0] = d * float(int8_t(u8(sc[is + 0]))) * float(q1);
        y[l + 32] = d * float(int8_t(u8(sc[is + 2]))) * float(q2);
        y[l + 64] = d * float(int8_t(u8(sc[is + 4]))) * float(q3);
        y[l + 96] = d * float(int8_t(u8(sc[is + 6]))) * float(q4);
      }
    }
  }
}
float value_q6_k(const std::byte* block, uint32_t e) {
  const uint32_t h = e / 128;
  const uint32_t g = (e % 128) / 32;
  const uint32_t l = e % 32;
  const uint32_t lo = (u8(block[64 * h + 32 * (g % 2) + l]) >> (4 * (g / 2))) & 15u;
  const uint32_t hi = (u8(block[128 + 32 * h + l]) >> (2 * g)) & 3u;
  const int q = int(lo | hi << 4) - 32;
  return f16_at(block + 208) * float(int8_t(u8(block[192 + e / 16]))) * float(q);
}

}  // namespace gguf_blocks
}  // namespace remat

// Decoding ggml's tensor blocks (as GGUF files store them) to float32, bit for bit what ggml's own
// dequantize_row_* (ggml-quants.c) and ggml_fp16/bf16_to_fp32_row produce: F32, F16, BF16, the
// 32-value blocks Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and the 256-value K-quants Q2_K ... Q6_K. The
// layouts and formulas below are the reference for the GPU decoders (GLSL must reproduce them
// bit for bit); tests/formats/gguf_blocks_ggml_test.cpp compares every type with ggml's library.
//
// Conventions in the formulas:
//  - Offsets are bytes from the start of the block; multi-byte fields are little-endian.
//  - f16(x) widens an IEEE binary16 field to float32: exact for every finite value and infinity;
//    a NaN stays a NaN with the quiet bit (bit 22) set and the rest of its payload kept, as
//    ggml's conversion does (a signalling NaN comes out quiet). gguf_f16_to_float below.
//  - e is the value's index in its block (0..31 or 0..255); q, sc, m are small integers that
//    convert to float exactly; "*", "+", "-" are float32 operations, each rounding to nearest.
//  - a K-quant sub-block is 16 values (Q2_K, Q3_K, Q6_K: scale index e/16) or 32 values (Q4_K,
//    Q5_K: scale index e/32).
//
// Rounding, and what a shader may reorder. In every format each product of scales and integers
// is exact in float32: an f16 scale has at most 11 significant bits and the integer factors of a
// product together at most 12 (the most: Q6_K, a 7-bit |scale| times a 5-bit |q|), so no product
// needs more than 23 of float32's 24 bits, and none overflows or is a float32 subnormal (the
// smallest nonzero magnitude is 2^-24). So each value is the exact real d*sc*q - dmin*m (or d*q +
// m) rounded once to float32 (to nearest, ties to even): the order of the multiplications, and
// whether the multiply-add is fused (fma) or not, never changes a bit; the only rounding is the
// final
// "+ m" / "- m1" of Q4_1, Q5_1, Q2_K, Q4_K and Q5_K, which must be one float32 addition of the
// two exact terms. What does change bits: any step in half precision (mediump, float16_t), or a
// rearranged sum such as d1*(q - m1/d1). For GLSL: unpackHalf2x16 widens finite f16 exactly;
// keep the arithmetic highp float32 (Vulkan rounds float32 add and multiply correctly; the
// float controls' RoundingModeRTE pins ties-to-even); the float32 subnormals Vulkan may flush
// occur only in F32 and BF16 values, never in a quantized one. remat's C++ is compiled with
// -ffp-contract=off all the same, to keep ggml's operations as written (formats/CMakeLists.txt).
//
// F32   4 bytes:  y = the float as stored.
// F16   2 bytes:  y = f16(h).
// BF16  2 bytes:  y = the float whose bits are b << 16 (exact; a NaN is kept as it is).
//
// Q8_0  32 values, 34 bytes: f16 d @0, int8 qs[32] @2.
//         y = float(qs[e]) * f16(d)
// Q4_0  32 values, 18 bytes: f16 d @0, u8 qs[16] @2.
//         q = e < 16 ? qs[e] & 15 : qs[e-16] >> 4                   (0..15)
//         y = float(q - 8) * f16(d)
// Q4_1  32 values, 20 bytes: f16 d @0, f16 m @2, u8 qs[16] @4.      q as Q4_0
//         y = float(q) * f16(d) + f16(m)                           (product, then one rounded add)
// Q5_0  32 values, 22 bytes: f16 d @0, u32 qh @2, u8 qs[16] @6.
//         q = (e < 16 ? qs[e] & 15 : qs[e-16] >> 4) | ((qh >> e) & 1) << 4      (0..31)
//         y = float(q - 16) * f16(d)
// Q5_1  32 values, 24 bytes: f16 d @0, f16 m @2, u32 qh @4, u8 qs[16] @8.   q as Q5_0
//         y = float(q) * f16(d) + f16(m)
//
// Q2_K  256 values, 84 bytes: u8 scales[16] @0, u8 qs[64] @16, f16 d @80, f16 dmin @82.
//         s = scales[e/16];  sc = s & 15;  m = s >> 4
//         q = (qs[32*(e/128) + e%32] >> (2*((e%128)/32))) & 3               (0..3)
//         dl = f16(d) * float(sc);  ml = f16(dmin) * float(m)
//         y = dl * float(q) - ml
// Q3_K  256 values, 110 bytes: u8 hmask[32] @0, u8 qs[64] @32, u8 scales[12] @96, f16 d @108.
//         j = e/16;  sc = q3k_scale(scales, j) - 32                         (-32..31), where the
//         6-bit q3k_scale = (j < 8 ? scales[j] & 15 : scales[j-8] >> 4)
//                           | ((scales[8 + j%4] >> (2*(j/4))) & 3) << 4
//         g = 4*(e/128) + (e%128)/32                                        (0..7)
//         q = ((qs[32*(e/128) + e%32] >> (2*(g%4))) & 3) - ((hmask[e%32] >> g) & 1 ? 0 : 4)
//                                                                           (-4..3)
//         dl = f16(d) * float(sc)
//         y = dl * float(q)
// Q4_K  256 values, 144 bytes: f16 d @0, f16 dmin @2, u8 scales[12] @4, u8 qs[128] @16.
//         (sc, m) = q4k_scale_min(scales, e/32)                             (6 bits each)
//         q = (qs[32*(e/64) + e%32] >> (4*((e/32)%2))) & 15                 (0..15)
//         d1 = f16(d) * float(sc);  m1 = f16(dmin) * float(m)
//         y = d1 * float(q) - m1
// Q5_K  256 values, 176 bytes: f16 d @0, f16 dmin @2, u8 scales[12] @4, u8 qh[32] @16,
//       u8 qs[128] @48.
//         (sc, m) as Q4_K;  q = (Q4_K's nibble) + 16 * ((qh[e%32] >> (e/32)) & 1)   (0..31)
//         d1 = f16(d) * float(sc);  m1 = f16(dmin) * float(m)
//         y = d1 * float(q) - m1
// Q6_K  256 values, 210 bytes: u8 ql[128] @0, u8 qh[64] @128, int8 scales[16] @192, f16 d @208.
//         h = e/128;  g = (e%128)/32;  l = e%32
//         lo = (ql[64*h + 32*(g%2) + l] >> (4*(g/2))) & 15
//         hi = (qh[32*h + l] >> (2*g)) & 3
//         q = (lo | hi << 4) - 32                                           (-32..31)
//         y = (f16(d) * float(scales[e/16])) * float(q)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "formats/gguf_types.h"

namespace remat {

// Decodes whole blocks of type `t` into `out`, out.size() values: `blocks` must hold exactly
// ggml_row_bytes(t, out.size()) bytes (out.size() a multiple of the block size).
// std::invalid_argument, naming the type, on a size mismatch or a type remat does not decode.
void decode_blocks(GgmlType t, std::span<const std::byte> blocks, std::span<float> out);

// Value `e` of one block (`block` holds exactly one block of `t`), computed on its own the way a
// GPU thread does: the per-value formulas above, equal bit for bit to what decode_blocks writes.
// std::invalid_argument as decode_blocks, and on e >= the block's value count.
float decode_block_value(GgmlType t, std::span<const std::byte> block, uint32_t e);

// ggml's f16 widening (GGML_FP16_TO_FP32): exact, and a NaN comes out quiet.
float gguf_f16_to_float(uint16_t h);

// Q4_K and Q5_K: the 6-bit scale and min of sub-block j (0..7, values 32*j .. 32*j+31) from the
// 12 scale bytes: for j < 4, sc = scales[j] & 63 and m = scales[j+4] & 63; for j >= 4, the low
// four bits come from scales[j+4] (sc: & 15, m: >> 4) and the top two from the otherwise unused
// top bits of scales[j-4] (sc) and scales[j] (m).
struct KScaleMin {
  uint8_t scale;
  uint8_t min;
};
KScaleMin q4k_scale_min(std::span<const std::byte, 12> scales, uint32_t j);

// Q3_K: the 6-bit scale of sub-block j (0..15, values 16*j .. 16*j+15) from the 12 scale bytes,
// before the -32 bias: low four bits from scales[j % 8] (j < 8: & 15; else >> 4), top two from
// scales[8 + j%4] >> (2*(j/4)).
uint8_t q3k_scale(std::span<const std::byte, 12> scales, uint32_t j);

}  // namespace remat

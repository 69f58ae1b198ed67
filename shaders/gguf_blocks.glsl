// Decoding ggml's tensor blocks (GGUF's F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K) where a kernel reads them, to the float32 values formats/gguf_blocks.h's
// decode_blocks writes, bit for bit (and so ggml's dequantize_row_*). Layouts and formulas are in
// that header; the functions here follow its per-value formulas in the same operation order.
//
// Storage: the blocks are read from a buffer of 32-bit words, bytes and halves extracted with
// shifts, so no 8- or 16-bit storage feature is needed. The including kernel declares the buffer
// and names its uint array GGUF_WORDS before the #include:
//   layout(std430, binding = 0) readonly buffer W { uint w_words[]; };
//   #define GGUF_WORDS w_words
//   #include "gguf_blocks.glsl"
// or, to read the words some other way (an R32UI texel view on CPU drivers, where texelFetch
// beats storage loads), defines GGUF_WORD(i) as word i instead:
//   layout(binding = 0) uniform utextureBuffer w_texels;
//   #define GGUF_WORD(i) texelFetch(w_texels, int(i)).x
// Byte offsets are from the start of that array. Blocks are packed (a Q8_0 block is 34 bytes), so
// fields sit at any byte offset; every block size is even, so a row that starts at an even byte
// keeps every f16 field at an even byte (gguf_u16's requirement). The binding must reach the end
// of the last 4-byte word that holds a block byte (the data padded to whole words).
//
// Exactness. f16 fields widen with integer operations only (gguf_f16: exact for subnormals, NaN
// quieted as ggml's conversion does), not unpackHalf2x16, whose handling of f16 subnormals and
// NaNs a device may choose. Every product of scales and integer codes is exact in float32 (see
// gguf_blocks.h), so the only rounding is the final "+ m" / "- m" of Q4_1, Q5_1, Q2_K, Q4_K,
// Q5_K; results are `precise` (no fused multiply-add, no reordering) all the same, so the
// arithmetic is that of the C++ reference as written. All float math is highp float32.
//
// API. `type` is one of gguf_block_ids.h's REMAT_GGUF_*; pass a specialization constant and the
// driver folds every switch below to the one format.
//   gguf_block_values(type), gguf_block_bytes(type), gguf_row_bytes(type, values)
//   gguf_block_value(type, b, e)        value e of the block at byte b (float types: e = 0)
//   gguf_row_value(type, r, k)          value k of a row of whole blocks starting at byte r
//   gguf_row_run4(type, r, k)           values k..k+3 of a row, k % 4 == 0
//   gguf_row_run8(type, r, k, lo, hi)   values k..k+7 of a row, k % 8 == 0
//   gguf_row_run16(type, r, k, v)       values k..k+15 of a row in v[4], k % 16 == 0
// The runs are the shape a matmul tile wants: a quantized run lies in one sub-block, so it reads
// that sub-block's scale once (gguf_sub_scale) and its codes with one fetch per array
// (gguf_codes4, gguf_codes16), then applies one formula per lane (gguf_apply4); they equal
// gguf_row_value.
#ifndef REMAT_GGUF_BLOCKS_GLSL
#define REMAT_GGUF_BLOCKS_GLSL

#include "gguf_block_ids.h"

#ifndef GGUF_WORD
#ifndef GGUF_WORDS
#error "define GGUF_WORDS (the uint array of the blocks) or GGUF_WORD(i) before gguf_blocks.glsl"
#endif
#define GGUF_WORD(i) GGUF_WORDS[i]
#endif

// ---- Layout facts.

uint gguf_block_values(uint type) {
  switch (type) {
    case REMAT_GGUF_F32:
    case REMAT_GGUF_F16:
    case REMAT_GGUF_BF16:
      return 1u;
    case REMAT_GGUF_Q8_0:
    case REMAT_GGUF_Q4_0:
    case REMAT_GGUF_Q4_1:
    case REMAT_GGUF_Q5_0:
    case REMAT_GGUF_Q5_1:
      return 32u;
    default:
      return 256u;
  }
}

uint gguf_block_bytes(uint type) {
  switch (type) {
    case REMAT_GGUF_F32: return 4u;
    case REMAT_GGUF_F16: return 2u;
    case REMAT_GGUF_BF16: return 2u;
    case REMAT_GGUF_Q8_0: return 34u;
    case REMAT_GGUF_Q4_0: return 18u;
    case REMAT_GGUF_Q4_1: return 20u;
    case REMAT_GGUF_Q5_0: return 22u;
    case REMAT_GGUF_Q5_1: return 24u;
    case REMAT_GGUF_Q2_K: return 84u;
    case REMAT_GGUF_Q3_K: return 110u;
    case REMAT_GGUF_Q4_K: return 144u;
    case REMAT_GGUF_Q5_K: return 176u;
    default: return 210u;  // Q6_K
  }
}

// Bytes of `values` values (a whole number of blocks).
uint gguf_row_bytes(uint type, uint values) {
  return values / gguf_block_values(type) * gguf_block_bytes(type);
}

// ---- Bytes, halves and words at byte offsets.

uint gguf_u8(uint o) {
  return (GGUF_WORD(o >> 2) >> ((o & 3u) << 3)) & 0xFFu;
}

int gguf_i8(uint o) {
  return int(gguf_u8(o) << 24) >> 24;
}

// The little-endian u16 at an even byte offset (never straddles a word).
uint gguf_u16(uint o) {
  return (GGUF_WORD(o >> 2) >> ((o & 2u) << 3)) & 0xFFFFu;
}

// The little-endian u32 of bytes o..o+3, o any offset (two words where it straddles).
uint gguf_u32(uint o) {
  const uint i = o >> 2;
  const uint s = (o & 3u) << 3;
  uint w = GGUF_WORD(i) >> s;
  if (s != 0u) w |= GGUF_WORD(i + 1u) << (32u - s);
  return w;
}

// Bytes o..o+3 as four lanes.
uvec4 gguf_bytes4(uint o) {
  return (uvec4(gguf_u32(o)) >> uvec4(0u, 8u, 16u, 24u)) & 0xFFu;
}

// ---- Float fields.

// The binary16 h widened to float32 as formats/gguf_blocks.h's gguf_f16_to_float does: exact for
// every finite value and infinity, a NaN keeps its payload with the quiet bit set. Normal values,
// infinities and NaNs by integer operations; zeros and subnormals as float(mantissa) * 2^-24, a
// product of an exact integer and a power of two whose result is a normal float32, so exact (and
// the sign applied after, so -0 stays -0). No findMSB: on CPU drivers it is a long emulation per
// lane, and every decoded run widens one or two f16 fields.
float gguf_f16(uint h) {
  const uint sign = (h & 0x8000u) << 16;
  const uint exponent = (h >> 10) & 0x1Fu;
  const uint mantissa = h & 0x3FFu;
  if (exponent == 0u) {
    precise float small = float(mantissa) * 5.9604644775390625e-8;  // 2^-24
    return uintBitsToFloat(floatBitsToUint(small) | sign);
  }
  const uint quiet = exponent == 0x1Fu && mantissa != 0u ? 0x00400000u : 0u;
  const uint e32 = exponent == 0x1Fu ? 0xFFu : exponent + 112u;
  return uintBitsToFloat(sign | e32 << 23 | mantissa << 13 | quiet);
}

float gguf_f16_at(uint o) {
  return gguf_f16(gguf_u16(o));
}

float gguf_bf16(uint b) {
  return uintBitsToFloat(b << 16);
}

// ---- One value: the per-value formulas of gguf_blocks.h (decode_block_value), each its own.

// The 4-bit code of value e (0..31) of a 32-value block whose 16 code bytes start at qs.
uint gguf_nibble(uint qs, uint e) {
  return e < 16u ? gguf_u8(qs + e) & 15u : gguf_u8(qs + e - 16u) >> 4;
}

// The 5-bit code: the nibble and bit e of the u32 qh as bit 4.
uint gguf_five_bits(uint qh, uint qs, uint e) {
  return gguf_nibble(qs, e) | ((gguf_u32(qh) >> e) & 1u) << 4;
}

// Q3_K's 6-bit scale of sub-block j (before the -32 bias) from the 12 scale bytes at s.
uint gguf_q3k_scale(uint s, uint j) {
  const uint low = j < 8u ? gguf_u8(s + j) & 15u : gguf_u8(s + j - 8u) >> 4;
  const uint high = (gguf_u8(s + 8u + j % 4u) >> (2u * (j / 4u))) & 3u;
  return low | high << 4;
}

// Q4_K and Q5_K's 6-bit scale (x) and min (y) of sub-block j from the 12 scale bytes at s.
uvec2 gguf_q4k_scale_min(uint s, uint j) {
  if (j < 4u) return uvec2(gguf_u8(s + j) & 63u, gguf_u8(s + j + 4u) & 63u);
  return uvec2((gguf_u8(s + j + 4u) & 15u) | (gguf_u8(s + j - 4u) >> 6) << 4,
               (gguf_u8(s + j + 4u) >> 4) | (gguf_u8(s + j) >> 6) << 4);
}

float gguf_value_q8_0(uint b, uint e) {
  precise float y = float(gguf_i8(b + 2u + e)) * gguf_f16_at(b);
  return y;
}

float gguf_value_q4_0(uint b, uint e) {
  precise float y = float(int(gguf_nibble(b + 2u, e)) - 8) * gguf_f16_at(b);
  return y;
}

float gguf_value_q4_1(uint b, uint e) {
  precise float y = float(gguf_nibble(b + 4u, e)) * gguf_f16_at(b) + gguf_f16_at(b + 2u);
  return y;
}

float gguf_value_q5_0(uint b, uint e) {
  precise float y = float(int(gguf_five_bits(b + 2u, b + 6u, e)) - 16) * gguf_f16_at(b);
  return y;
}

float gguf_value_q5_1(uint b, uint e) {
  precise float y =
      float(gguf_five_bits(b + 4u, b + 8u, e)) * gguf_f16_at(b) + gguf_f16_at(b + 2u);
  return y;
}

float gguf_value_q2_k(uint b, uint e) {
  const uint sc = gguf_u8(b + e / 16u);
  const uint q = (gguf_u8(b + 16u + 32u * (e / 128u) + e % 32u) >> (2u * ((e % 128u) / 32u))) & 3u;
  precise float dl = gguf_f16_at(b + 80u) * float(sc & 15u);
  precise float ml = gguf_f16_at(b + 82u) * float(sc >> 4);
  precise float y = dl * float(q) - ml;
  return y;
}

float gguf_value_q3_k(uint b, uint e) {
  const uint g = 4u * (e / 128u) + (e % 128u) / 32u;
  const int low = int((gguf_u8(b + 32u + 32u * (e / 128u) + e % 32u) >> (2u * (g % 4u))) & 3u);
  const int q = low - (((gguf_u8(b + e % 32u) >> g) & 1u) != 0u ? 0 : 4);
  precise float dl = gguf_f16_at(b + 108u) * float(int(gguf_q3k_scale(b + 96u, e / 16u)) - 32);
  precise float y = dl * float(q);
  return y;
}

float gguf_value_q4_k(uint b, uint e) {
  const uvec2 sm = gguf_q4k_scale_min(b + 4u, e / 32u);
  const uint q = (gguf_u8(b + 16u + 32u * (e / 64u) + e % 32u) >> (4u * ((e / 32u) % 2u))) & 15u;
  precise float d1 = gguf_f16_at(b) * float(sm.x);
  precise float m1 = gguf_f16_at(b + 2u) * float(sm.y);
  precise float y = d1 * float(q) - m1;
  return y;
}

float gguf_value_q5_k(uint b, uint e) {
  const uvec2 sm = gguf_q4k_scale_min(b + 4u, e / 32u);
  const uint low = (gguf_u8(b + 48u + 32u * (e / 64u) + e % 32u) >> (4u * ((e / 32u) % 2u))) & 15u;
  const uint q = low + 16u * ((gguf_u8(b + 16u + e % 32u) >> (e / 32u)) & 1u);
  precise float d1 = gguf_f16_at(b) * float(sm.x);
  precise float m1 = gguf_f16_at(b + 2u) * float(sm.y);
  precise float y = d1 * float(q) - m1;
  return y;
}

float gguf_value_q6_k(uint b, uint e) {
  const uint h = e / 128u;
  const uint g = (e % 128u) / 32u;
  const uint l = e % 32u;
  const uint lo = (gguf_u8(b + 64u * h + 32u * (g % 2u) + l) >> (4u * (g / 2u))) & 15u;
  const uint hi = (gguf_u8(b + 128u + 32u * h + l) >> (2u * g)) & 3u;
  const int q = int(lo | hi << 4) - 32;
  precise float y = gguf_f16_at(b + 208u) * float(gguf_i8(b + 192u + e / 16u)) * float(q);
  return y;
}

float gguf_block_value(uint type, uint b, uint e) {
  switch (type) {
    case REMAT_GGUF_F32: return uintBitsToFloat(gguf_u32(b));
    case REMAT_GGUF_F16: return gguf_f16_at(b);
    case REMAT_GGUF_BF16: return gguf_bf16(gguf_u16(b));
    case REMAT_GGUF_Q8_0: return gguf_value_q8_0(b, e);
    case REMAT_GGUF_Q4_0: return gguf_value_q4_0(b, e);
    case REMAT_GGUF_Q4_1: return gguf_value_q4_1(b, e);
    case REMAT_GGUF_Q5_0: return gguf_value_q5_0(b, e);
    case REMAT_GGUF_Q5_1: return gguf_value_q5_1(b, e);
    case REMAT_GGUF_Q2_K: return gguf_value_q2_k(b, e);
    case REMAT_GGUF_Q3_K: return gguf_value_q3_k(b, e);
    case REMAT_GGUF_Q4_K: return gguf_value_q4_k(b, e);
    case REMAT_GGUF_Q5_K: return gguf_value_q5_k(b, e);
    default: return gguf_value_q6_k(b, e);
  }
}

float gguf_row_value(uint type, uint r, uint k) {
  const uint per_block = gguf_block_values(type);
  return gguf_block_value(type, r + k / per_block * gguf_block_bytes(type), k % per_block);
}

#include "gguf_block_runs.glsl"

#endif  // REMAT_GGUF_BLOCKS_GLSL

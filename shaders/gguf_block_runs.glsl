// Runs of 4, 8 or 16 consecutive values of a GGUF block row decoded together (included by
// gguf_blocks.glsl, whose header describes the API): what a matmul tile calls. A run starts at a
// multiple of its length, so in every block format it lies in one sub-block (16 or 32 values) and
// shares its scale, and its codes are consecutive bytes of each array the format keeps them in:
// one scale decode (gguf_sub_scale), one fetch of four (gguf_codes4) or sixteen (gguf_codes16)
// bytes per array, then the per-value formula of gguf_blocks.h on each lane (gguf_apply4), so a
// run equals gguf_row_value value for value, bit for bit.
#ifndef REMAT_GGUF_BLOCK_RUNS_GLSL
#define REMAT_GGUF_BLOCK_RUNS_GLSL

// The scale of the sub-block holding value e of a quantized block at byte b: d multiplies the
// code; m is added (Q4_1, Q5_1: the f16 min) or subtracted (Q2_K, Q4_K, Q5_K: dmin times the
// sub-block's min), 0 and unused elsewhere. Both exact products, as in the per-value formulas.
struct GgufScale {
  float d;
  float m;
};

// Bytes o..o+15 where o % 16 == 0: through 16-byte texels one fetch where the kernel defines
// GGUF_TEXEL16(o) (matmul_blocks_words.glsl), else gguf_bytes16. Q4_K and Q5_K blocks (144 and
// 176 bytes) keep every block, and so their header and code arrays, at a multiple of 16 bytes
// from the start of a row of whole blocks, and a row from the words' start.
uvec4 gguf_aligned16(uint o);

// Byte i (0..15) of the 16 bytes v.
uint gguf_byte16(uvec4 v, uint i) {
  return (v[i >> 2] >> ((i & 3u) << 3)) & 0xFFu;
}

// gguf_q4k_scale_min of sub-block j from a Q4_K/Q5_K block's first 16 bytes (d, dmin, then
// the 12 scale bytes: scale byte i is byte 4 + i).
uvec2 gguf_q4k_scale_min16(uvec4 head, uint j) {
  if (j < 4u) return uvec2(gguf_byte16(head, 4u + j) & 63u, gguf_byte16(head, 8u + j) & 63u);
  return uvec2((gguf_byte16(head, 8u + j) & 15u) | (gguf_byte16(head, j) >> 6) << 4,
               (gguf_byte16(head, 8u + j) >> 4) | (gguf_byte16(head, 4u + j) >> 6) << 4);
}

GgufScale gguf_sub_scale(uint type, uint b, uint e) {
  precise float d = 0.0;
  precise float m = 0.0;
  switch (type) {
    case REMAT_GGUF_Q4_1:
    case REMAT_GGUF_Q5_1:
      d = gguf_f16_at(b);
      m = gguf_f16_at(b + 2u);
      break;
    case REMAT_GGUF_Q2_K: {
      const uint sc = gguf_u8(b + e / 16u);
      d = gguf_f16_at(b + 80u) * float(sc & 15u);
      m = gguf_f16_at(b + 82u) * float(sc >> 4);
      break;
    }
    case REMAT_GGUF_Q3_K:
      d = gguf_f16_at(b + 108u) * float(int(gguf_q3k_scale(b + 96u, e / 16u)) - 32);
      break;
    case REMAT_GGUF_Q4_K:
    case REMAT_GGUF_Q5_K: {
      // d, dmin and the 12 scale bytes are the block's first 16 bytes: one aligned fetch.
      const uvec4 head = gguf_aligned16(b);
      const uvec2 sm = gguf_q4k_scale_min16(head, e / 32u);
      d = gguf_f16(head.x & 0xFFFFu) * float(sm.x);
      m = gguf_f16(head.x >> 16) * float(sm.y);
      break;
    }
    case REMAT_GGUF_Q6_K:
      d = gguf_f16_at(b + 208u) * float(gguf_i8(b + 192u + e / 16u));
      break;
    default:  // Q8_0, Q4_0, Q5_0
      d = gguf_f16_at(b);
      break;
  }
  return GgufScale(d, m);
}

// The 4-bit codes of values e0..e0+3 (e0 % 4 == 0) of a 32-value block's 16 code bytes at qs.
uvec4 gguf_nibbles4(uint qs, uint e0) {
  return e0 < 16u ? gguf_bytes4(qs + e0) & 15u : gguf_bytes4(qs + e0 - 16u) >> 4;
}

// Bits e0..e0+3 of the u32 at qh.
uvec4 gguf_bits4(uint qh, uint e0) {
  return (uvec4(gguf_u32(qh)) >> (uvec4(0u, 1u, 2u, 3u) + e0)) & 1u;
}

// The integer codes of values e0..e0+3 (e0 % 4 == 0) of the quantized block at byte b, with the
// format's bias applied (Q4_0: q - 8, Q5_0: q - 16, Q3_K: -4..3, Q6_K: q - 32).
ivec4 gguf_codes4(uint type, uint b, uint e0) {
  switch (type) {
    case REMAT_GGUF_Q8_0:
      return ivec4(gguf_bytes4(b + 2u + e0) << 24) >> 24;
    case REMAT_GGUF_Q4_0:
      return ivec4(gguf_nibbles4(b + 2u, e0)) - 8;
    case REMAT_GGUF_Q4_1:
      return ivec4(gguf_nibbles4(b + 4u, e0));
    case REMAT_GGUF_Q5_0:
      return ivec4(gguf_nibbles4(b + 6u, e0) | gguf_bits4(b + 2u, e0) << 4) - 16;
    case REMAT_GGUF_Q5_1:
      return ivec4(gguf_nibbles4(b + 8u, e0) | gguf_bits4(b + 4u, e0) << 4);
    case REMAT_GGUF_Q2_K: {
      const uvec4 qs = gguf_bytes4(b + 16u + 32u * (e0 / 128u) + e0 % 32u);
      return ivec4((qs >> (2u * ((e0 % 128u) / 32u))) & 3u);
    }
    case REMAT_GGUF_Q3_K: {
      const uint g = 4u * (e0 / 128u) + (e0 % 128u) / 32u;
      const uvec4 qs = gguf_bytes4(b + 32u + 32u * (e0 / 128u) + e0 % 32u);
      const uvec4 high = (gguf_bytes4(b + e0 % 32u) >> g) & 1u;
      return ivec4((qs >> (2u * (g % 4u))) & 3u) - 4 * (1 - ivec4(high));
    }
    case REMAT_GGUF_Q4_K: {
      const uvec4 qs = gguf_bytes4(b + 16u + 32u * (e0 / 64u) + e0 % 32u);
      return ivec4((qs >> (4u * ((e0 / 32u) % 2u))) & 15u);
    }
    case REMAT_GGUF_Q5_K: {
      const uvec4 qs = gguf_bytes4(b + 48u + 32u * (e0 / 64u) + e0 % 32u);
      const uvec4 high = (gguf_bytes4(b + 16u + e0 % 32u) >> (e0 / 32u)) & 1u;
      return ivec4(((qs >> (4u * ((e0 / 32u) % 2u))) & 15u) + 16u * high);
    }
    default: {  // Q6_K
      const uint h = e0 / 128u;
      const uint g = (e0 % 128u) / 32u;
      const uint l = e0 % 32u;
      const uvec4 lo = (gguf_bytes4(b + 64u * h + 32u * (g % 2u) + l) >> (4u * (g / 2u))) & 15u;
      const uvec4 hi = (gguf_bytes4(b + 128u + 32u * h + l) >> (2u * g)) & 3u;
      return ivec4(lo | hi << 4) - 32;
    }
  }
}

// The values of codes q under scale s, each lane as the per-value formula computes it.
vec4 gguf_apply4(uint type, GgufScale s, ivec4 q) {
  precise vec4 y;
  switch (type) {
    case REMAT_GGUF_Q4_1:
    case REMAT_GGUF_Q5_1:
      y = vec4(q) * s.d + s.m;
      break;
    case REMAT_GGUF_Q2_K:
    case REMAT_GGUF_Q4_K:
    case REMAT_GGUF_Q5_K:
      y = s.d * vec4(q) - s.m;
      break;
    case REMAT_GGUF_Q3_K:
    case REMAT_GGUF_Q6_K:
      y = s.d * vec4(q);
      break;
    default:  // Q8_0, Q4_0, Q5_0
      y = vec4(q) * s.d;
      break;
  }
  return y;
}

// Values e0..e0+3 (e0 % 4 == 0) of the quantized block at byte b.
vec4 gguf_block_run4(uint type, uint b, uint e0) {
  return gguf_apply4(type, gguf_sub_scale(type, b, e0), gguf_codes4(type, b, e0));
}

// Values k..k+3 of a row of whole blocks starting at byte r; k % 4 == 0.
vec4 gguf_row_run4(uint type, uint r, uint k) {
  switch (type) {
    case REMAT_GGUF_F32:
      return uintBitsToFloat(uvec4(gguf_u32(r + 4u * k), gguf_u32(r + 4u * k + 4u),
                                   gguf_u32(r + 4u * k + 8u), gguf_u32(r + 4u * k + 12u)));
    case REMAT_GGUF_F16: {
      const uint a = gguf_u32(r + 2u * k);
      const uint c = gguf_u32(r + 2u * k + 4u);
      return vec4(gguf_f16(a & 0xFFFFu), gguf_f16(a >> 16), gguf_f16(c & 0xFFFFu),
                  gguf_f16(c >> 16));
    }
    case REMAT_GGUF_BF16: {
      const uint a = gguf_u32(r + 2u * k);
      const uint c = gguf_u32(r + 2u * k + 4u);
      return uintBitsToFloat(uvec4(a << 16, a & 0xFFFF0000u, c << 16, c & 0xFFFF0000u));
    }
    default: {
      const uint per_block = gguf_block_values(type);
      return gguf_block_run4(type, r + k / per_block * gguf_block_bytes(type), k % per_block);
    }
  }
}

// Values k..k+7 of a row of whole blocks starting at byte r, k % 8 == 0: lo k..k+3, hi the rest.
// A quantized run decodes its sub-block's scale once for both halves.
void gguf_row_run8(uint type, uint r, uint k, out vec4 lo, out vec4 hi) {
  const uint per_block = gguf_block_values(type);
  if (per_block == 1u) {
    lo = gguf_row_run4(type, r, k);
    hi = gguf_row_run4(type, r, k + 4u);
    return;
  }
  const uint b = r + k / per_block * gguf_block_bytes(type);
  const uint e = k % per_block;
  const GgufScale s = gguf_sub_scale(type, b, e);
  lo = gguf_apply4(type, s, gguf_codes4(type, b, e));
  hi = gguf_apply4(type, s, gguf_codes4(type, b, e + 4u));
}

// Runs of 16: every array of codes a run reads is 16 consecutive bytes (and Q5_0/Q5_1's qh
// word), fetched as four words by gguf_bytes16; where the kernel reads its words through 16-byte
// texels it defines GGUF_BYTES16(o) to fetch them with one or two texels instead of four words.
// The codes and values equal gguf_codes4's and the per-value formulas', lane for lane.

// Bytes o..o+15 as four little-endian u32, o any offset.
uvec4 gguf_bytes16(uint o) {
#ifdef GGUF_BYTES16
  return GGUF_BYTES16(o);
#else
  return uvec4(gguf_u32(o), gguf_u32(o + 4u), gguf_u32(o + 8u), gguf_u32(o + 12u));
#endif
}

uvec4 gguf_aligned16(uint o) {
#ifdef GGUF_TEXEL16
  return GGUF_TEXEL16(o);
#else
  return gguf_bytes16(o);
#endif
}

// The four bytes of word w as lanes.
uvec4 gguf_lanes(uint w) {
  return (uvec4(w) >> uvec4(0u, 8u, 16u, 24u)) & 0xFFu;
}

// The integer codes of values e0..e0+15 (e0 % 16 == 0) of the quantized block at byte b, four
// per element of q (q[j]: values e0 + 4j.., as gguf_codes4(type, b, e0 + 4j)). Each word of
// codes is assembled whole (four bytes shifted and masked at once, a high bit moved to each byte
// by one multiply) and split into lanes once: the same integers as per-lane extraction with a
// quarter of the operations, which CPU drivers pay per lane.
void gguf_codes16(uint type, uint b, uint e0, out ivec4 q[4]) {
  switch (type) {
    case REMAT_GGUF_Q8_0: {
      const uvec4 w = gguf_bytes16(b + 2u + e0);
      for (uint j = 0u; j < 4u; ++j) q[j] = ivec4(uvec4(w[j]) << uvec4(24u, 16u, 8u, 0u)) >> 24;
      break;
    }
    case REMAT_GGUF_Q4_0:
    case REMAT_GGUF_Q4_1: {  // low nibbles of the 16 code bytes for e0 = 0, high for 16
      const uvec4 w = gguf_bytes16(b + (type == REMAT_GGUF_Q4_0 ? 2u : 4u));
      const uint shift = e0 < 16u ? 0u : 4u;
      const int bias = type == REMAT_GGUF_Q4_0 ? 8 : 0;
      for (uint j = 0u; j < 4u; ++j) q[j] = ivec4(gguf_lanes((w[j] >> shift) & 0x0F0F0F0Fu)) - bias;
      break;
    }
    case REMAT_GGUF_Q5_0:
    case REMAT_GGUF_Q5_1: {
      const uint qh = b + (type == REMAT_GGUF_Q5_0 ? 2u : 4u);
      const uvec4 w = gguf_bytes16(qh + 4u);
      const uint shift = e0 < 16u ? 0u : 4u;
      const uint high = gguf_u32(qh) >> e0;  // bit l: value e0 + l's fifth bit
      const int bias = type == REMAT_GGUF_Q5_0 ? 16 : 0;
      for (uint j = 0u; j < 4u; ++j) {
        // Bits 4j..4j+3 of high to bit 4 of bytes 0..3: the four shifted copies (by 0, 7, 14
        // and 21) of a 4-bit number never overlap, so the multiply adds no carry.
        const uint spread = (((high >> (4u * j)) & 15u) * 0x00204081u & 0x01010101u) << 4;
        q[j] = ivec4(gguf_lanes(((w[j] >> shift) & 0x0F0F0F0Fu) | spread)) - bias;
      }
      break;
    }
    case REMAT_GGUF_Q2_K: {
      const uvec4 w = gguf_bytes16(b + 16u + 32u * (e0 / 128u) + e0 % 32u);
      const uint shift = 2u * ((e0 % 128u) / 32u);
      for (uint j = 0u; j < 4u; ++j) q[j] = ivec4(gguf_lanes((w[j] >> shift) & 0x03030303u));
      break;
    }
    case REMAT_GGUF_Q3_K: {  // q = low - 4 * (1 - high) = (low | high << 2) - 4
      const uint g = 4u * (e0 / 128u) + (e0 % 128u) / 32u;
      const uvec4 w = gguf_bytes16(b + 32u + 32u * (e0 / 128u) + e0 % 32u);
      const uvec4 m = gguf_bytes16(b + e0 % 32u);
      for (uint j = 0u; j < 4u; ++j) {
        const uint low = (w[j] >> (2u * (g % 4u))) & 0x03030303u;
        const uint high = (m[j] >> g) & 0x01010101u;
        q[j] = ivec4(gguf_lanes(low | high << 2)) - 4;
      }
      break;
    }
    case REMAT_GGUF_Q4_K: {
      const uvec4 w = gguf_aligned16(b + 16u + 32u * (e0 / 64u) + e0 % 32u);
      const uint shift = 4u * ((e0 / 32u) % 2u);
      for (uint j = 0u; j < 4u; ++j) q[j] = ivec4(gguf_lanes((w[j] >> shift) & 0x0F0F0F0Fu));
      break;
    }
    case REMAT_GGUF_Q5_K: {
      const uvec4 w = gguf_aligned16(b + 48u + 32u * (e0 / 64u) + e0 % 32u);
      const uvec4 m = gguf_aligned16(b + 16u + e0 % 32u);
      const uint shift = 4u * ((e0 / 32u) % 2u);
      for (uint j = 0u; j < 4u; ++j) {
        const uint high = (m[j] >> (e0 / 32u)) & 0x01010101u;
        q[j] = ivec4(gguf_lanes(((w[j] >> shift) & 0x0F0F0F0Fu) | high << 4));
      }
      break;
    }
    default: {  // Q6_K
      const uint h = e0 / 128u;
      const uint g = (e0 % 128u) / 32u;
      const uint l = e0 % 32u;
      const uvec4 w = gguf_bytes16(b + 64u * h + 32u * (g % 2u) + l);
      const uvec4 m = gguf_bytes16(b + 128u + 32u * h + l);
      for (uint j = 0u; j < 4u; ++j) {
        const uint lo = (w[j] >> (4u * (g / 2u))) & 0x0F0F0F0Fu;
        const uint hi = (m[j] >> (2u * g)) & 0x03030303u;
        q[j] = ivec4(gguf_lanes(lo | hi << 4)) - 32;
      }
      break;
    }
  }
}

// Values k..k+15 of a row of whole blocks starting at byte r, k % 16 == 0, v[j] holding values
// k + 4j..k + 4j + 3. A quantized run decodes its sub-block's scale once, its codes by
// gguf_codes16.
void gguf_row_run16(uint type, uint r, uint k, out vec4 v[4]) {
  const uint per_block = gguf_block_values(type);
  if (per_block == 1u) {
    for (uint j = 0u; j < 4u; ++j) v[j] = gguf_row_run4(type, r, k + 4u * j);
    return;
  }
  const uint b = r + k / per_block * gguf_block_bytes(type);
  const uint e = k % per_block;
  const GgufScale s = gguf_sub_scale(type, b, e);
  ivec4 q[4];
  gguf_codes16(type, b, e, q);
  for (uint j = 0u; j < 4u; ++j) v[j] = gguf_apply4(type, s, q[j]);
}

#endif  // REMAT_GGUF_BLOCK_RUNS_GLSL

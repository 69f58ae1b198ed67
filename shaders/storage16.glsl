// 16-bit storage, fp32 in registers: the conversions every kernel that reads or writes f16/bf16
// buffers uses, bit for bit the host's (base/half_float.h). Buffers hold the raw 16-bit patterns
// as uint16_t (GL_EXT_shader_16bit_storage; the device must have storageBuffer16BitAccess), or,
// for texel views, R16G16B16A16 formats: SFLOAT widens f16 by itself, UINT views carry bf16.
#ifndef REMAT_STORAGE16_GLSL
#define REMAT_STORAGE16_GLSL

#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require

float bf16_to_f32(uint b) { return uintBitsToFloat(b << 16); }
vec4 bf16_to_f32(uvec4 b) { return uintBitsToFloat(b << 16); }

float f16_to_f32(uint h) { return unpackHalf2x16(h).x; }
vec4 f16_to_f32(uvec4 h) {
  return vec4(unpackHalf2x16(h.x).x, unpackHalf2x16(h.y).x, unpackHalf2x16(h.z).x,
              unpackHalf2x16(h.w).x);
}

// Round to nearest, ties to even; NaN stays NaN (base/half_float.cpp float_to_bf16).
uint f32_to_bf16(float f) {
  const uint bits = floatBitsToUint(f);
  if (isnan(f)) return (bits >> 16) | 0x40u;
  return (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
}

// Round to nearest, ties to even, in integer arithmetic so that every device gives the same bits
// (a float16_t conversion's rounding mode is the implementation's choice).
uint f32_to_f16(float f) {
  const uint bits = floatBitsToUint(f);
  const uint sign = (bits >> 16) & 0x8000u;
  const uint a = bits & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7E00u;
  if (a >= 0x477FF000u) return sign | 0x7C00u;
  if (a < 0x38800000u) return sign | uint(roundEven(uintBitsToFloat(a) * 16777216.0));
  const uint r = a - (112u << 23);
  return sign | ((r + 0xFFFu + ((r >> 13) & 1u)) >> 13);
}

#endif  // REMAT_STORAGE16_GLSL

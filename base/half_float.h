// IEEE binary16 (f16) and bfloat16 (bf16) on the host, bit for bit what the shaders do
// (shaders/storage16.glsl): widening is exact; narrowing rounds to nearest, ties to even, and keeps
// NaN a NaN (quiet) and infinities infinite. f16 overflow gives ±inf, underflow gives subnormals
// or ±0, as IEEE 754 round-to-nearest does.
#pragma once

#include <cstdint>

namespace remat {

float f16_to_float(uint16_t h);
float bf16_to_float(uint16_t b);
uint16_t float_to_f16(float f);
uint16_t float_to_bf16(float f);

}  // namespace remat

// Host-side f16/bf16 rounding for the 16-bit kernel tests: the bits a kernel stores for a float
// (round to nearest even, base/half_float.h, the same as storage16.glsl) and their widening.
#pragma once

#include <cstdint>
#include <vector>

#include "base/half_float.h"
#include "graph/tensor.h"

namespace remat::test {

inline uint16_t narrow(float v, DType t) {
  return t == DType::f16 ? float_to_f16(v) : float_to_bf16(v);
}
inline float widen(uint16_t h, DType t) {
  return t == DType::f16 ? f16_to_float(h) : bf16_to_float(h);
}
// v rounded to what `t` stores (unchanged for f32).
inline std::vector<float> rounded(std::vector<float> v, DType t) {
  for (float& x : v) x = t == DType::f32 ? x : widen(narrow(x, t), t);
  return v;
}

}  // namespace remat::test

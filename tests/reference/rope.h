// Plain reference for rotary position embedding in Hugging Face's convention (rotate_half), on
// compact [B, T, H, D] tensors, forward and backward side by side.
#pragma once

#include <cstddef>
#include <vector>

#include "graph/rope_scaling.h"

namespace remat::ref {

struct RopeDims {
  std::size_t B, T, H, D;  // D even
  float theta;
  Llama3Scaling llama3 = {};  // Llama 3's frequency scaling; all zero: none
};

// The angle of pair (i, i + D/2) at position t, float(t) * theta^(-2i/D) (times the llama3
// frequency scale), formed in float with exactly the kernels' operations (shaders/rope_params.h,
// rope_body.glsl): bit-identical angles.
float rope_angle(const RopeDims& d, std::size_t t, std::size_t i);

// y = x with each pair (i, i + D/2) of every head at position t rotated by +rope_angle. Resizes y.
template <class T>
void rope_forward(std::vector<T>& y, const std::vector<T>& x, const RopeDims& d);

// dx (=|+=) dy rotated by -rope_angle; dx must be sized already.
template <class T>
void rope_backward(std::vector<T>& dx, const std::vector<T>& dy, const RopeDims& d,
                   bool accumulate);

}  // namespace remat::ref

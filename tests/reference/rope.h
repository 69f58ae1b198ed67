// Plain reference for rotary position embedding in Hugging Face's convention (rotate_half), on
// compact [B, T, H, D] tensors, forward and backward side by side. Partial RoPE (R < D, Qwen3.5):
// only the first R elements of each head turn, the rest pass through (transformers'
// apply_rotary_pos_emb with rotary_dim = cos.shape[-1]).
#pragma once

#include <cstddef>
#include <vector>

#include "graph/rope_scaling.h"

namespace remat::ref {

struct RopeDims {
  std::size_t B, T, H, D;  // D even
  float theta;
  Llama3Scaling llama3 = {};  // Llama 3's frequency scaling; all zero: none
  std::size_t R = 0;          // rotary dims, even, R <= D; 0: all D
  std::size_t rotary() const { return R == 0 ? D : R; }
};

// The angle of pair (i, i + R/2) at position t, float(t) * theta^(-2i/R) (times the llama3
// frequency scale), formed in float with exactly the kernels' operations (shaders/rope_params.h,
// rope_body.glsl): bit-identical angles.
float rope_angle(const RopeDims& d, std::size_t t, std::size_t i);

// y = x with each pair (i, i + R/2) of every head at position t rotated by +rope_angle, and the
// elements from R on copied. Resizes y.
template <class T>
void rope_forward(std::vector<T>& y, const std::vector<T>& x, const RopeDims& d);

// dx (=|+=) dy rotated by -rope_angle (from R on: dy as it is); dx must be sized already.
template <class T>
void rope_backward(std::vector<T>& dx, const std::vector<T>& dy, const RopeDims& d,
                   bool accumulate);

}  // namespace remat::ref

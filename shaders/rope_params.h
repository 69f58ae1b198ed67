// Push constants of the rotary position embedding kernels (rope_forward.comp,
// rope_backward.comp), shared by GLSL and C++ like push_constants.h.
#ifndef REMAT_ROPE_PARAMS_H
#define REMAT_ROPE_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// Heads of D floats laid out [B, T, H, D] inside rows of `stride` floats, head 0 at column
// `offset` of each row: element (b, t, h, d) of the input is at
// (b T + t) in_stride + in_offset + h D + d, and likewise for the output. A compact q or k is
// stride H D, offset 0; q and k inside a fused qkv row are the same buffer at two offsets.
// Only the first R floats of each head turn (partial RoPE, R < D: Qwen3.5's
// partial_rotary_factor); the other D - R pass through, copied bit for bit (or, backward
// accumulating, added) unless copy_rest is 0: in place, where they already hold their values.
// Forward: out = rotate(in, +angle). Backward: out (=|+=) rotate(in, -angle), in = dL/d(out of
// the forward). angle(t, i) = t * inv_freq_i for pair (i, i + R/2), i < R/2, where inv_freq_i is
// theta^(-2i/R) times Llama 3's frequency scale (graph/rope_scaling.h):
//   s = clamp(theta^(-2i/R) * scale_slope - scale_offset, 0, 1),
//   scale = inv_factor + s * (1 - inv_factor),
// each operation rounded on its own; without scaling slope = offset = 0 and inv_factor = 1, so
// scale is exactly 1.
struct RopeParams {
  uint B;
  uint T;
  uint H;          // heads of this tensor: query heads for q, key/value heads for k
  uint D;          // head size, even
  uint R;          // rotary dims: the first R floats of each head turn; even, 0 < R <= D
  uint copy_rest;  // 1: out's D - R pass-through floats get in's; 0: left as they are (in place)
  uint in_stride;
  uint in_offset;
  uint out_stride;
  uint out_offset;
  float inv_R;         // 1 / R rounded to float (a multiply, correctly rounded; division is not)
  float log2_theta;    // log2 of the base theta (10000 for Llama 2, 500000 for Llama 3)
  uint accumulate;     // backward only: 0 overwrite, 1 add
  float scale_slope;   // original_ctx / (2 pi (high_freq_factor - low_freq_factor)), or 0
  float scale_offset;  // low_freq_factor / (high_freq_factor - low_freq_factor), or 0
  float inv_factor;    // 1 / factor, or 1
  uint packed;         // 1: t is positions[b T + t] (binding 2, packed rows); 0: the row position
};
REMAT_PUSH_WORDS(RopeParams, 17)

// inv_freq_i = theta^(-2i/R) = 2^x with x = -(2i * inv_R) * log2_theta, and 2^x = 2^n * 2^f for
// n = floor(x + 0.5), f = x - n in [-0.5, 0.5]: 2^f is the degree-7 Taylor polynomial of e^(f ln 2)
// (truncation below 6e-9 relative) in Horner form, coefficient k = ln(2)^k / k!. Only
// multiplications, additions, floor and ldexp, each correctly rounded in Vulkan and in C++, so
// the kernels (rope_body.glsl, with `precise`) and the reference (tests/reference/rope.cpp)
// form bit-identical angles float(t) * inv_freq_i. The device's exp2 carries no such guarantee.
#define REMAT_ROPE_EXP2_C1 0.6931471805599453f
#define REMAT_ROPE_EXP2_C2 0.2402265069591007f
#define REMAT_ROPE_EXP2_C3 0.055504108664821576f
#define REMAT_ROPE_EXP2_C4 0.009618129107628477f
#define REMAT_ROPE_EXP2_C5 0.0013333558146428441f
#define REMAT_ROPE_EXP2_C6 0.00015403530393381606f
#define REMAT_ROPE_EXP2_C7 1.5252733804059838e-05f
// q = 2^f for q, f floats declared by the caller (`precise` in GLSL), Horner's order.
#define REMAT_ROPE_EXP2_POLYNOMIAL(q, f) \
  q = REMAT_ROPE_EXP2_C7;                \
  q = q * f + REMAT_ROPE_EXP2_C6;        \
  q = q * f + REMAT_ROPE_EXP2_C5;        \
  q = q * f + REMAT_ROPE_EXP2_C4;        \
  q = q * f + REMAT_ROPE_EXP2_C3;        \
  q = q * f + REMAT_ROPE_EXP2_C2;        \
  q = q * f + REMAT_ROPE_EXP2_C1;        \
  q = q * f + 1.0f

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_ROPE_PARAMS_H

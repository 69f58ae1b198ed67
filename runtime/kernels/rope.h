// Dispatches for rotary position embedding (Su et al. 2021) in Hugging Face's convention
// (LlamaRotaryEmbedding + rotate_half): in each head of D floats, element i and element i + D/2
// (i < D/2) are rotated together by angle t * theta^(-2i/D), t = 0 .. T-1 the position:
//   out[i]       = in[i] cos - in[i + D/2] sin
//   out[i + D/2] = in[i + D/2] cos + in[i] sin.
// The backward is the rotation by -angle, applied to the gradient of the output.
//
// Layout [B, T, H, D] within rows of `stride` floats, head 0 at column `offset` (RopeLayout):
// this is how the attention kernels read q and k (shaders/attention_forward_body.glsl: head h of
// position t at columns h*hs .. (h+1)*hs of row t), so RoPE can run on q and k where they lie,
// be it compact [B,T,H,D] tensors or q and k inside a fused qkv row. q and k are two dispatches
// with their own head counts: grouped-query attention has fewer key/value heads than query heads.
//
// cos and sin are computed in float on the device, by instructions the forward and backward
// kernels share (rope_body.glsl). The angle float(t) * theta^(-2i/D) (times Llama 3's frequency
// scale, from rope_scale_terms) is formed from 1/D and log2(theta) (rope_inv_d, rope_log2_theta)
// with correctly rounded float operations only, so
// tests/reference/rope.cpp reproduces it bit for bit; what remains is the device's cos and sin
// (after reducing the angle to [-pi, pi]) against double precision.
// Tested against the double reference (tests/kernels/rope_test.cpp) at 2e-6 relative + 2e-6
// absolute (inputs O(1)); measured worst on llvmpipe 2.8e-7 absolute at T = 23 and 5.2e-7 at
// T = 4096. Accumulation adds exactly; two runs are bit-identical.
// Storage buffers only, like the other elementwise kernels (GELU, residual): no texel variant.
#pragma once

#include "graph/rope_scaling.h"
#include "runtime/kernels/act_variant.h"
#include "runtime/kernels/grad_write.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

struct RopeShape {
  uint32_t B = 0, T = 0;
  uint32_t H = 0;  // heads of this tensor: query heads for q, key/value heads for k
  uint32_t D = 0;  // head size, even
  float theta = 10000.0f;
  Llama3Scaling llama3;  // Llama 3's frequency scaling; all zero: none (graph/rope_scaling.h)
};

// Where the heads of a [B, T, H, D] tensor lie: row (b, t) starts at (b T + t) * stride floats,
// head 0 at column offset. stride 0 means compact: H * D.
struct RopeLayout {
  uint32_t stride = 0;
  uint32_t offset = 0;
};

// The float constants the angle is formed from: 1/D and log2(theta), in double rounded to float.
float rope_inv_d(uint32_t D);
float rope_log2_theta(float theta);

// out = rotate(in, +angle). in and out must not overlap. Throws std::invalid_argument for an
// odd or zero D, theta not positive and finite, a layout whose heads overrun their rows, or
// sizes beyond 32-bit indexing.
// `positions` (packed rows, [B,T] u32) gives each token's position t; empty, t is its row
// position.
Dispatch rope_forward(const RopeShape& s, BufferSlice in, RopeLayout in_layout, BufferSlice out,
                      RopeLayout out_layout, DType act = DType::f32, BufferSlice positions = {});

// d_in (=|+=) rotate(d_out, -angle). d_out and d_in must not overlap. Throws as rope_forward.
Dispatch rope_backward(const RopeShape& s, BufferSlice d_out, RopeLayout d_out_layout,
                       BufferSlice d_in, RopeLayout d_in_layout, GradWrite mode,
                       BufferSlice positions = {});

}  // namespace remat::kernels

// Dispatches for rotary position embedding (Su et al. 2021) in Hugging Face's convention
// (LlamaRotaryEmbedding + rotate_half): in each head of D floats, of its first R (the rotary
// dims, R = D unless partial) element i and element i + R/2 (i < R/2) are rotated together by
// angle t * theta^(-2i/R), t = 0 .. T-1 the position:
//   out[i]       = in[i] cos - in[i + R/2] sin
//   out[i + R/2] = in[i + R/2] cos + in[i] sin,
// and out[e] = in[e] for R <= e < D, bit for bit. The backward is the rotation by -angle, applied
// to the gradient of the output, and the identity on the pass-through elements.
//
// Partial RoPE (R < D) is Qwen3.5's full-attention layers: partial_rotary_factor 0.25 of head_dim
// 256, R = 64. transformers (models/qwen3_5/modeling_qwen3_5.py) forms inv_freq from
// arange(0, R, 2) / R, R = int(head_dim * partial_rotary_factor), and apply_rotary_pos_emb turns
// q[..., :R] with rotate_half over those R (rotary_dim = cos.shape[-1]) and concatenates
// q[..., R:] unchanged; llama.cpp's ggml_rope_multi with n_dims = n_rot = R rotates pairs
// (i, i + R/2) of the first R channels with theta_scale = base^(-2/R) and copies the rest
// (ggml-cpu ops.cpp, ggml_compute_forward_rope_flt). Both take interleaved M-RoPE
// (mrope_section [11, 11, 10]; LLAMA_ROPE_TYPE_IMROPE): each frequency i reads the t, h or w
// position id by i mod 3. On text alone the three ids are the token's position (transformers
// expands position_ids to 3 equal rows; llama.cpp's llm_graph_input_pos::set_input copies pos
// into the first three), so every frequency turns by the same t (in ggml's
// ggml_mrope_cache_init theta_t, theta_h and theta_w start equal and are scaled alike) and the
// result is exactly this plain partial NeoX-style RoPE.
//
// Layout [B, T, H, D] within rows of `stride` floats, head 0 at column `offset` (RopeLayout):
// this is how the attention kernels read q and k (shaders/attention_forward_body.glsl: head h of
// position t at columns h*hs .. (h+1)*hs of row t), so RoPE can run on q and k where they lie,
// be it compact [B,T,H,D] tensors or q and k inside a fused qkv row. q and k are two dispatches
// with their own head counts: grouped-query attention has fewer key/value heads than query heads.
//
// cos and sin are computed in float on the device, by instructions the forward and backward
// kernels share (rope_body.glsl). The angle float(t) * theta^(-2i/R) (times Llama 3's frequency
// scale, from rope_scale_terms) is formed from 1/R and log2(theta) (rope_inv_d, rope_log2_theta)
// with correctly rounded float operations only, so
// tests/reference/rope.cpp reproduces it bit for bit; what remains is the device's cos and sin
// (after reducing the angle to [-pi, pi]) against double precision.
// Tested against the double reference (tests/kernels/rope_test.cpp) at 2e-6 relative + 2e-6
// absolute (inputs O(1)); measured worst on llvmpipe 2.8e-7 absolute at T = 23 and 5.2e-7 at
// T = 4096, and 4.7e-7 at T = 4096 with D 256, R 64 (Qwen3.5). Accumulation adds exactly; two
// runs are bit-identical.
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
  uint32_t R = 0;        // rotary dims, even, R <= D: the first R of each head turn; 0: all D
};

// Where the heads of a [B, T, H, D] tensor lie: row (b, t) starts at (b T + t) * stride floats,
// head 0 at column offset. stride 0 means compact: H * D.
struct RopeLayout {
  uint32_t stride = 0;
  uint32_t offset = 0;
};

// The float constants the angle is formed from: 1/R and log2(theta), in double rounded to float.
float rope_inv_d(uint32_t R);
float rope_log2_theta(float theta);

// out = rotate(in, +angle). in and out must not overlap, or be the same slice with the same
// layout: in place, each element is read before it is written by the same invocation, and the
// pass-through elements are left as they are (no work for them). Throws std::invalid_argument for
// an odd or zero D, an odd R or one above D, theta not positive and finite, a layout whose heads
// overrun their rows, or sizes beyond 32-bit indexing.
// `positions` (packed rows, [B,T] u32) gives each token's position t; empty, t is its row
// position.
Dispatch rope_forward(const RopeShape& s, BufferSlice in, RopeLayout in_layout, BufferSlice out,
                      RopeLayout out_layout, DType act = DType::f32, BufferSlice positions = {});

// d_in (=|+=) rotate(d_out, -angle). d_out and d_in must not overlap, or (overwriting) be the
// same slice with the same layout, as rope_forward. Throws as rope_forward.
Dispatch rope_backward(const RopeShape& s, BufferSlice d_out, RopeLayout d_out_layout,
                       BufferSlice d_in, RopeLayout d_in_layout, GradWrite mode,
                       BufferSlice positions = {});

}  // namespace remat::kernels

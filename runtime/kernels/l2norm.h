// Dispatches for the per-head L2 normalisation of Gated DeltaNet's q and k (transformers'
// l2norm in qwen3_next / qwen3_5, use_qk_l2norm_in_kernel; llama.cpp's ggml_l2_norm):
//   y = x * scale / sqrt(sum_d x^2 + eps),
// per (token, head) row of D floats, eps inside the root and not divided by D (transformers
// passes 1e-6; llama.cpp the model's rms_norm_eps, also 1e-6 for Qwen3.5), scale 1 for k and
// 1/sqrt(d_k) for q (the reference multiplies the normalised q by it afterwards, as here).
// x is read in place from a wider tensor: head h of token t starts at t * stride + offset + h*D
// (q and k sit side by side in the conv's [tokens, 2 key_dim + value_dim] output); y is dense
// [tokens, heads, D]. dx is written at x's places, overwriting or adding (GradWrite), and
// nothing else of that tensor is touched.
// Forward and backward: one invocation per row, serial fma loops over D in one order; the
// backward recomputes the inverse norm with the forward's own code (shaders/l2norm.glsl):
// dx = scale * r * (dy - n * sum(dy * n)), n = x * r. Deterministic; tested against the double
// reference (tests/kernels/l2norm_test.cpp).
#pragma once

#include "runtime/kernels/grad_write.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

struct L2normShape {
  uint32_t tokens = 0;  // B * T
  uint32_t heads = 0;
  uint32_t D = 0;
  uint32_t stride = 0;  // floats from one token of x to the next (heads * D when x is dense)
  uint32_t offset = 0;  // floats before token 0's first head
  float eps = 1e-6f;
  float scale = 1.0f;
};

// y[tokens, heads, D] from x.
Dispatch l2norm_forward(const L2normShape& s, BufferSlice x, BufferSlice y);

// dx (x's layout) from dy[tokens, heads, D] and x.
Dispatch l2norm_backward(const L2normShape& s, BufferSlice dy, BufferSlice x, BufferSlice dx,
                         GradWrite mode);

}  // namespace remat::kernels

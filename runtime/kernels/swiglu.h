// Dispatches for SwiGLU (Shazeer 2020), the activation of Llama's MLP:
//   h = silu(g) * u,  silu(x) = x * sigmoid(x),
// with g and u the gate and up projections (gate_proj, up_proj), each `count` floats.
// Backward, from dh: du = dh * silu(g) and dg = dh * u * silu'(g), where
// silu'(g) = s (1 + g (1 - s)), s = sigmoid(g); 1 - s is formed as exp(-g) s, accurate where s
// is close to 1. silu(g) is one shared GLSL function, so du multiplies exactly the forward's
// silu(g). dg and du each overwrite or add (GradWrite): they are separate gradient tensors.
// GeGLU (Gemma's MLP, `gelu_gate`): GPT-2's tanh GELU in place of silu, h = gelu(g) * u, with
// the same gelu and gelu' functions as the GELU kernels (shaders/gelu.glsl).
// Elementwise with a grid stride, storage buffers only, like GELU.
// Tested against the double reference (tests/kernels/swiglu_test.cpp) at 1e-5 relative with
// absolute floors of 1e-7 (h) and 1e-6 (dg, du); measured worst on llvmpipe 6e-7 relative for h
// and du, 2.3e-5 relative (4e-7 absolute) for dg where silu' nears zero. Accumulation adds
// exactly; two runs are bit-identical.
#pragma once

#include "runtime/kernels/act_variant.h"
#include "runtime/kernels/grad_write.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

// h[i] = silu(g[i]) * u[i] (gelu_gate: gelu(g[i]) * u[i]) for i < count; g, u and h stored as
// `act`.
Dispatch swiglu_forward(uint32_t count, BufferSlice g, BufferSlice u, BufferSlice h,
                        DType act = DType::f32, bool gelu_gate = false);

// dg[i] (=|+=) dh[i] * u[i] * silu'(g[i]), du[i] (=|+=) dh[i] * silu(g[i]) (gelu_gate: gelu and
// gelu'); g and u stored as `act`.
Dispatch swiglu_backward(uint32_t count, BufferSlice dh, BufferSlice g, BufferSlice u,
                         BufferSlice dg, BufferSlice du, GradWrite dg_mode, GradWrite du_mode,
                         DType act = DType::f32, bool gelu_gate = false);

}  // namespace remat::kernels

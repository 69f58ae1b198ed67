// Dispatches for the causal depthwise conv1d + SiLU of Qwen3.5's Gated DeltaNet layers, run over
// the concatenated q, k, v channels of in_proj_qkv (transformers' causal_conv1d_fn with
// activation "silu", no bias; llama.cpp's ssm_conv then silu):
//   y[r,t,c] = silu(sum_{k<K} w[c,k] x[r, t-(K-1)+k, c]),
// x and y [rows, T, C], w [C, K] (the checkpoint's conv1d.weight [C, 1, K] without its middle
// axis), K = linear_conv_kernel_dim (4). Taps before the start of the token's example read zero:
// the start of its row, or with `positions` ([rows, T] u32, packed rows) t - positions[r,t], so
// the window restarts at every position 0 and a packed row computes each of its examples exactly
// as that example alone (the same taps summed in the same order: the same bits).
// Forward: one invocation per (row, chunk of 64 tokens, channel) walks its tokens with the
//   window in registers (one load of x per token), taps summed k = 0, 1, ... (fma); neighbouring
//   invocations take neighbouring channels.
// Backward input: dx[t'] = sum_j dy(t'+j) silu'(pre(t'+j)) w[c, K-1-j] over j = 0 .. K-1 inside
//   the example, the pre-activations recomputed rather than saved: one invocation per (row,
//   chunk, channel) walks the chunk and the K-1 tokens after it, each pre and dpre computed once.
// Backward weight: dw[c,k] summed over all rows·T tokens in a fixed order, no atomics: on GPUs one
//   workgroup per channel whose 64 invocations walk contiguous 64ths of the tokens, then a fixed
//   shared-memory tree; where barriers are expensive (quirks.barriers_are_expensive: lavapipe)
//   one invocation per channel walking every token. The two orders differ in the last bits; each
//   is the same on every run.
// K (1 to 8) is also a specialization constant, so the tap loops unroll into registers.
// dx and dw are separate dispatches, each overwriting or adding (GradWrite).
// Tested against the double reference (tests/kernels/causal_conv1d_test.cpp).
#pragma once

#include "runtime/kernels/grad_write.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

struct CausalConv1dShape {
  uint32_t rows = 0;  // B
  uint32_t T = 0;
  uint32_t C = 0;  // channels: 2 * key_dim + value_dim
  uint32_t K = 4;  // taps, 1 .. 8
};

// y[rows,T,C] = silu(conv(x)); positions empty: every row is one example.
Dispatch causal_conv1d_forward(const CausalConv1dShape& s, BufferSlice x, BufferSlice w,
                               BufferSlice y, BufferSlice positions = {});

// dx[rows,T,C] from dy, x and w.
Dispatch causal_conv1d_backward_input(const CausalConv1dShape& s, BufferSlice dy, BufferSlice x,
                                      BufferSlice w, BufferSlice dx, GradWrite mode,
                                      BufferSlice positions = {});

// dw[C,K] from dy, x and w; the device's quirks choose the summation order.
Dispatch causal_conv1d_backward_weight(const DeviceQuirks& quirks, const CausalConv1dShape& s,
                                       BufferSlice dy, BufferSlice x, BufferSlice w, BufferSlice dw,
                                       GradWrite mode, BufferSlice positions = {});

}  // namespace remat::kernels

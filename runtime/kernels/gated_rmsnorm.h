// Dispatches for Gated DeltaNet's output norm (transformers' Qwen3_5RMSNormGated, "norm before
// gate"; llama.cpp's build_norm_gated):
//   y = o * rstd * w * silu(z),  rstd = 1/sqrt(mean_d(o^2) + eps),
// o, z, y [rows, D] with rows = tokens * value heads and D the value head size, w [D] shared by
// all heads and used as stored: NOT 1 + w (llama.cpp's conversion adds 1 to every other norm
// weight of the model but not to linear_attn.norm.weight). eps is the config's rms_norm_eps.
// Forward: one invocation per row, serial loops over D; rstd[rows] saved for the backward.
// Backward: do = rstd * (g - n * mean(g * n)) with n = o * rstd, g = dy * w * silu(z), and
//   dz = dy * n * w * silu'(z), one invocation per row; dw[d] = sum over rows of dy * n * silu(z)
//   in its own dispatch of one workgroup per channel, a fixed 64-invocation row stride and a
//   fixed shared-memory tree: the same bits on every device and run, no atomics. do, dz and dw
//   each overwrite or add (GradWrite).
// Tested against the double reference (tests/kernels/gated_rmsnorm_test.cpp).
#pragma once

#include "runtime/kernels/grad_write.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

struct GatedRmsnormShape {
  uint32_t rows = 0;  // tokens * value heads
  uint32_t D = 0;     // value head size
  float eps = 1e-6f;
};

// y[rows, D] and rstd[rows] from o, z [rows, D] and w[D].
Dispatch gated_rmsnorm_forward(const GatedRmsnormShape& s, BufferSlice o, BufferSlice z,
                               BufferSlice w, BufferSlice y, BufferSlice rstd);

// do and dz [rows, D] from dy, o, z, w and the forward's rstd.
Dispatch gated_rmsnorm_backward(const GatedRmsnormShape& s, BufferSlice dy, BufferSlice o,
                                BufferSlice z, BufferSlice w, BufferSlice rstd, BufferSlice d_o,
                                BufferSlice dz, GradWrite do_mode, GradWrite dz_mode);

// dw[D] from dy, o, z and the forward's rstd.
Dispatch gated_rmsnorm_backward_weight(const GatedRmsnormShape& s, BufferSlice dy, BufferSlice o,
                                       BufferSlice z, BufferSlice rstd, BufferSlice dw,
                                       GradWrite mode);

}  // namespace remat::kernels

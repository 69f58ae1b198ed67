// Dispatches for RMSNorm (Llama's LlamaRMSNorm: weight only, no bias, no mean subtraction).
//
// Gemma (RmsnormShape::unit_offset) stores the gain as an offset from 1: every w below is then
// 1 + w, formed in fp32 as transformers' Gemma3RMSNorm does.
// Forward:  y[rows,C] = x * rstd * w, rstd[row] = 1/sqrt(mean_c(x^2) + eps), rstd saved for the
//           backward as LayerNorm saves mean and rstd. One invocation per row, a fixed-order
//           serial sum over C.
// Backward: with n = x * rstd and g = dy * w, dx = rstd * (g - n * mean_c(g * n)) and
//           dw[c] = sum over rows 0, 1, 2, ... of dy * n. One dispatch: row invocations for dx,
//           then channel invocations for dw, each a serial loop in row order (no atomics), so
//           two runs are bit-identical. dx and dw are each overwritten or added to (GradWrite).
// CPU drivers (quirks.texel_fetch_beats_storage_loads) read the inputs through R32F texel views
// (rmsnorm_*_texels.comp); same arithmetic, same bits.
// Tested against the double reference (tests/kernels/rmsnorm_test.cpp) at 1e-4 relative + 1e-5
// absolute (dw: + 1e-5 * rows, it sums rows terms); measured worst on llvmpipe: y 6e-7 relative,
// rstd 5e-7 relative, dx 1.5e-6 absolute, dw 6.3e-6 absolute over 128 rows.
#pragma once

#include "runtime/kernels/act_variant.h"
#include "runtime/kernels/grad_write.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

struct RmsnormShape {
  uint32_t rows = 0;  // B * T
  uint32_t C = 0;
  float eps = 1e-6f;
  bool unit_offset = false;  // the gain is 1 + w (Gemma's norms), not w; dw is the same
  // Floats from one row of x (and dx) to the next; 0: C, dense. Qwen3.5's q_norm reads q in place
  // from q_proj's output, whose head rows hold D query then D gate floats: stride 2D. y and dy
  // stay dense, and dx's floats between rows are left as they are.
  uint32_t x_stride = 0;
};

// y[rows,C] and rstd[rows] from x[rows,C] and w[C]; x and y stored as `act` (16-bit: storage
// buffers, not texel views).
Dispatch rmsnorm_forward(const DeviceQuirks& quirks, const RmsnormShape& s, BufferSlice x,
                         BufferSlice w, BufferSlice y, BufferSlice rstd, DType act = DType::f32);

// dx[rows,C] and dw[C] from dy[rows,C], x, w and the forward's rstd; x stored as `act`.
Dispatch rmsnorm_backward(const DeviceQuirks& quirks, const RmsnormShape& s, BufferSlice dy,
                          BufferSlice x, BufferSlice w, BufferSlice rstd, BufferSlice dx,
                          BufferSlice dw, GradWrite dx_mode, GradWrite dw_mode,
                          DType act = DType::f32);

}  // namespace remat::kernels

// Dispatches for Gated DeltaNet's decay and beta gates (transformers' Qwen3_5GatedDeltaNet, in
// fp32; llama.cpp folds -exp(A_log) into its ssm_a tensor at conversion):
//   g = -exp(A_log[h]) * softplus(a + dt_bias[h]),  beta = sigmoid(b),
// a, b, g, beta [tokens, heads] (in_proj_a and in_proj_b outputs, one float per value head),
// A_log and dt_bias [heads]. softplus is PyTorch's (threshold 20: x itself above it), with its
// derivative (1 above the threshold, sigmoid below); shaders/softplus.glsl.
// Forward: elementwise.
// Backward: da = dg * (-exp(A_log)) * softplus'(a + dt_bias), db = dbeta * beta * (1 - beta),
//   dA_log[h] = sum_t dg * g and ddt_bias[h] = sum_t da, in one dispatch of one workgroup per
//   head: a fixed 64-invocation token stride and a fixed shared-memory tree, so the sums' order
//   is the same on every device and run (no atomics). da and db each overwrite or add; dA_log and
//   ddt_bias share one flag (GradWrite).
// Tested against the double reference (tests/kernels/gdn_gates_test.cpp).
#pragma once

#include "runtime/kernels/grad_write.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

struct GdnGatesShape {
  uint32_t tokens = 0;  // B * T
  uint32_t heads = 0;   // value heads
};

// g and beta [tokens, heads] from a, b [tokens, heads], A_log and dt_bias [heads].
Dispatch gdn_gates_forward(const GdnGatesShape& s, BufferSlice a, BufferSlice b, BufferSlice a_log,
                           BufferSlice dt_bias, BufferSlice g, BufferSlice beta);

// da_log and ddt_bias empty: A_log and dt_bias are frozen (LoRA) and get no gradient; da and db
// are written as ever.
struct GdnGatesGrads {
  BufferSlice da, db, da_log, ddt_bias;
  GradWrite da_mode = GradWrite::overwrite;
  GradWrite db_mode = GradWrite::overwrite;
  GradWrite params_mode = GradWrite::overwrite;  // dA_log and ddt_bias
};

// da, db [tokens, heads], dA_log, ddt_bias [heads] from dg, dbeta and the forward's inputs.
Dispatch gdn_gates_backward(const GdnGatesShape& s, BufferSlice dg, BufferSlice dbeta,
                            BufferSlice a, BufferSlice b, BufferSlice a_log, BufferSlice dt_bias,
                            const GdnGatesGrads& out);

}  // namespace remat::kernels

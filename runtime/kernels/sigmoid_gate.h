// Dispatches for the output gate of Qwen3.5's gated full attention (transformers'
// Qwen3_5Attention: attn_output * sigmoid(gate) before o_proj; llama.cpp's qwen35
// build_layer_attn):
//   y = x * sigmoid(gate),
// x and y dense [tokens, heads, D]. The gate is read in place: q_proj's output holds, per head,
// D query floats then D gate floats (transformers chunks view(..., heads, 2D) into halves), so
// head row k's gate starts at k * gate_head_stride + gate_offset (2D and D there; D and 0 for a
// dense gate). Backward: dx = dy * s and dgate = dy * x * s * (1 - s), s = sigmoid(gate), 1 - s
// formed as exp(-gate) s; dgate lands at the gate's own places (the gate half of dq_proj's
// output), each of dx and dgate overwriting or adding (GradWrite). Elementwise, deterministic.
// Tested against the double reference (tests/kernels/sigmoid_gate_test.cpp).
#pragma once

#include "runtime/kernels/grad_write.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

struct SigmoidGateShape {
  uint32_t count = 0;  // elements of x: tokens * heads * D
  uint32_t D = 0;
  uint32_t gate_head_stride = 0;  // floats from one head row's gate to the next
  uint32_t gate_offset = 0;       // floats before the first gate
};

// y from x and gate.
Dispatch sigmoid_gate_forward(const SigmoidGateShape& s, BufferSlice x, BufferSlice gate,
                              BufferSlice y);

// dx (x's layout) and dgate (the gate's layout) from dy, x and gate.
Dispatch sigmoid_gate_backward(const SigmoidGateShape& s, BufferSlice dy, BufferSlice x,
                               BufferSlice gate, BufferSlice dx, BufferSlice dgate,
                               GradWrite dx_mode, GradWrite dgate_mode);

}  // namespace remat::kernels

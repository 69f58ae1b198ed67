// The gated delta rule's forward in chunkwise (WY) form (Yang et al. 2024, "Parallelizing Linear
// Transformers with the Delta Rule over Sequence Length"; "Gated Delta Networks", section 3.3):
// the same recurrence and interface as gated_delta_rule.h's forward, run as blocks of
// kDeltaRuleBlock tokens (graph/delta_rule_workspace.h) whose work is small dense products.
// tests/reference/gated_delta_rule_chunked.h has the mathematics; gated_delta_rule_wy_common.glsl
// the workspace's parts.
//
// Four dispatches: k and q staged as vec4 rows; a parallel pass per (row, value head, block) for
// A, M, Kd, Qz and ze; a parallel forward substitution per four columns for Ut and W; then the
// serial pass over the blocks, per four state columns, three products with the state per block.
// Blocks sit at multiples of kDeltaRuleBlock from t = 0: t0 must be one and t1 one or T, and then a
// range run in calls gives the bits of one whole-range call.
//
// The graph's kernel for gated_delta_state, gated_delta_rule and their backward
// (runtime/op_lowering_qwen35.cpp); gated_delta_rule.h's sequential kernels remain as the
// benchmarks' peer.
#pragma once

#include "runtime/kernels/gated_delta_rule.h"

namespace remat::kernels {

// Bytes of the workspace one forward call over s's range uses.
uint64_t gated_delta_rule_wy_forward_workspace(const GatedDeltaRuleShape& s);

// The most steps one forward call may run under llvmpipe's loop limit (0: no limit).
uint32_t gated_delta_rule_wy_max_forward_steps(const DeviceQuirks& quirks, uint32_t dk);

// As gated_delta_rule_forward, with its workspace (gated_delta_rule_wy_forward_workspace bytes).
std::vector<Dispatch> gated_delta_rule_wy_forward(const DeviceQuirks& quirks,
                                                  const GatedDeltaRuleShape& s,
                                                  const GatedDeltaRuleInputs& in, BufferSlice s_in,
                                                  BufferSlice o, BufferSlice s_out,
                                                  BufferSlice workspace);

// The backward's three scratch buffers (graph/delta_rule_workspace.h has their parts).
struct GatedDeltaRuleWyWorkspace {
  uint64_t work_bytes = 0, keep_bytes = 0, partial_bytes = 0;
};
GatedDeltaRuleWyWorkspace gated_delta_rule_wy_backward_workspace(const GatedDeltaRuleShape& s);

// The most steps one backward call may run under llvmpipe's loop limit (0: no limit).
uint32_t gated_delta_rule_wy_max_backward_steps(const DeviceQuirks& quirks, uint32_t dk);

// The longest range one forward and one backward call may each run (the smaller limit; 0: no
// limit): a chunk of the graph's delta rule is one call of each.
uint32_t gated_delta_rule_wy_max_steps(const DeviceQuirks& quirks, uint32_t dk);

// As gated_delta_rule_backward: every gradient over [t0, t1) from d_o and ds_out (empty: zero),
// the block-start states recomputed from s_in (empty: zero) by the forward's own passes. Eight
// dispatches: the forward's stage, prepare and solve, its serial pass keeping each block's S0 and
// U, the serial state gradient (dU, dS, dR, dv), the parallel pair terms, the per-token gradients,
// and the fixed-order sums (dq, dk over value heads; dg within each example).
std::vector<Dispatch> gated_delta_rule_wy_backward(
    const DeviceQuirks& quirks, const GatedDeltaRuleShape& s, const GatedDeltaRuleInputs& in,
    BufferSlice s_in, BufferSlice d_o, BufferSlice ds_out, const GatedDeltaRuleGrads& grads,
    BufferSlice work, BufferSlice keep, BufferSlice partials);

}  // namespace remat::kernels

// The gated delta rule's forward in chunkwise (WY) form (Yang et al. 2024, "Parallelizing Linear
// Transformers with the Delta Rule over Sequence Length"; "Gated Delta Networks", section 3.3):
// the same recurrence and interface as gated_delta_rule.h's forward, run as blocks of
// kDeltaRuleBlock tokens (graph/delta_rule_workspace.h) whose work is small dense products.
// tests/reference/gated_delta_rule_chunked.h has the mathematics; gated_delta_rule_wy_common.glsl
// the workspace's parts.
//
// Three dispatches: a parallel pass per (row, value head, block) for A, M, Kd and ze; a parallel
// forward substitution per column for Ut and W; then the serial pass over the blocks, per state
// column, three products with the state per block. Blocks sit at multiples of kDeltaRuleBlock
// from t = 0: t0 must be one and t1 one or T, and then a range run in calls gives the bits of one
// whole-range call.
//
// Not yet the graph's kernel: its backward in the same form is still to come, and a forward in
// one form with a backward in the other would break the bits' independence of the plan.
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

}  // namespace remat::kernels

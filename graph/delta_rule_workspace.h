// The scratch memory of the gated delta rule's kernels, as one contract: the chunkwise (WY)
// kernels (runtime/kernels/gated_delta_rule_wy.h) size their buffers by it, the graph builder and
// autodiff size the ops' workspace tensors by it, the lowering cuts those tensors into parts by it,
// and the planner checks each part against the storage-binding limit by it. Pure arithmetic, no
// Vulkan.
//
// The forward ops' workspace is the chunkwise forward's scratch for one call. The backward's holds
// the chunkwise backward's three buffers for one chunk plus the two state gradients a chunked
// backward hands from chunk to chunk, every part starting on a 256-byte boundary (Vulkan's largest
// minStorageBufferOffsetAlignment), so each is bound on its own. Both are sized for one call's
// range (the chunk length L), so a short chunk keeps them small.
#pragma once

#include <cstdint>

namespace remat {

// Tokens per block of the chunkwise (WY) form (runtime/kernels/gated_delta_rule_wy.h): blocks sit
// at fixed multiples of it from t = 0, so a range a call runs must start at one (and end at one
// or at T) for its bits to be those of the whole sequence. 64 as flash-linear-attention's
// chunk_gated_delta_rule: small enough that the block's [64, 64] matrices and the forward
// substitution stay cheap, large enough that the serial pass runs T / 64 steps.
constexpr uint64_t kDeltaRuleBlock = 64;

// The chunkwise forward's workspace for a range of `steps` tokens: per (row, value head, block)
// A and M [64, 64], W, Kd, Qz, Kr and Qr [64, dk4], Ut [64, dv4] and ze [64], in bytes (dk4, dv4:
// dk and dv rounded up to 4).
uint64_t delta_rule_wy_forward_scratch(uint64_t rows, uint64_t Hv, uint64_t dk, uint64_t dv,
                                       uint64_t steps);

// The chunkwise backward's three scratch buffers for a range of `steps` tokens, in bytes: the
// forward's workspace it rebuilds (delta_rule_wy_forward_scratch); per (row, value head, block)
// S0 and dSo [dk4, dv4], U, dU and dR [64, dv4], P, Qm and E [64, 64], three [64] and one [dv4];
// and dq, dk per value head [2, rows, steps, Hv, dk].
struct DeltaRuleWyBackwardScratch {
  uint64_t work_bytes = 0, keep_bytes = 0, partial_bytes = 0;
};
DeltaRuleWyBackwardScratch delta_rule_wy_backward_scratch(uint64_t rows, uint64_t Hv, uint64_t dk,
                                                          uint64_t dv, uint64_t steps);

struct DeltaRuleDims {
  uint64_t rows = 1, Hv = 1, dk = 1, dv = 1;
  uint64_t steps = 1;  // L: the longest range one call runs
};

// Sub-range length: the least s with s * s >= L.
uint64_t delta_rule_sub_steps(uint64_t steps);

// dv columns one backward workgroup takes: its shared memory holds ceil(2 dk / 4) vec4s per
// column in 1024 (16 KiB), at most 64 columns.
uint64_t delta_rule_backward_columns(uint64_t dk, uint64_t dv);

// The sequential kernels' two scratch buffers, in bytes (runtime/kernels/gated_delta_rule.h: the
// benchmarks' peer of the chunkwise form, not the graph's kernel).
struct DeltaRuleKernelScratch {
  uint64_t state_bytes = 0;
  uint64_t partial_bytes = 0;
};
DeltaRuleKernelScratch delta_rule_kernel_scratch(const DeltaRuleDims& d);

// The forward ops' workspace (gated_delta_state, gated_delta_rule): the chunkwise forward's
// scratch for one call of `steps` tokens, in bytes.
uint64_t delta_rule_forward_workspace_bytes(const DeltaRuleDims& d);

// Where each part of the backward's workspace tensor sits (byte offsets) and its size in bytes:
// the chunkwise backward's three scratch buffers for one chunk, then the two state gradients a
// chunked backward hands from chunk to chunk ([rows, Hv, dk, dv] each).
struct DeltaRuleWorkspaceLayout {
  uint64_t work_at = 0, work_bytes = 0;
  uint64_t keep_at = 0, keep_bytes = 0;
  uint64_t partials_at = 0, partial_bytes = 0;
  uint64_t carry_at[2] = {0, 0};  // dL/dS at a chunk boundary, in and out, alternating
  uint64_t carry_bytes = 0;
  uint64_t bytes = 0;  // the whole workspace
};
DeltaRuleWorkspaceLayout delta_rule_workspace_layout(const DeltaRuleDims& d);

// The largest part of either workspace: what must fit one storage-buffer binding.
uint64_t delta_rule_workspace_largest_part(const DeltaRuleDims& d);

// Why `chunk` cannot cut a delta rule's sequence (TrainShape::delta_chunk), or "" when it can: 0
// (the sequence whole) or a multiple of kDeltaRuleBlock, since the chunkwise kernels' blocks sit
// at fixed multiples of it and a call's range must start at one.
const char* delta_chunk_refusal(int chunk);

}  // namespace remat

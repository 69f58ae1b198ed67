#include "graph/delta_rule_workspace.h"

#include <algorithm>

namespace remat {
namespace {

constexpr uint64_t kSharedVec4s = 1024;
constexpr uint64_t kMaxColumns = 64;
constexpr uint64_t kPartAlignment = 256;

uint64_t div_up(uint64_t n, uint64_t d) {
  return (n + d - 1) / d;
}

uint64_t aligned(uint64_t bytes) {
  return div_up(bytes, kPartAlignment) * kPartAlignment;
}

}  // namespace

uint64_t delta_rule_wy_forward_scratch(uint64_t rows, uint64_t Hv, uint64_t dk, uint64_t dv,
                                       uint64_t steps) {
  const uint64_t C = kDeltaRuleBlock, blocks = div_up(steps, C);
  const uint64_t dk4 = div_up(dk, 4) * 4, dv4 = div_up(dv, 4) * 4;
  return 4 * rows * Hv * blocks * (C * (2 * C + 5 * dk4 + dv4) + C);
}

DeltaRuleWyBackwardScratch delta_rule_wy_backward_scratch(uint64_t rows, uint64_t Hv, uint64_t dk,
                                                          uint64_t dv, uint64_t steps) {
  const uint64_t C = kDeltaRuleBlock, blocks = div_up(steps, C);
  const uint64_t dk4 = div_up(dk, 4) * 4, dv4 = div_up(dv, 4) * 4;
  const uint64_t keep = 2 * dk4 * dv4 + 3 * C * dv4 + 3 * C * C + 3 * C + dv4;
  return {delta_rule_wy_forward_scratch(rows, Hv, dk, dv, steps), 4 * rows * Hv * blocks * keep,
          4 * 2 * rows * steps * Hv * dk};
}

uint64_t delta_rule_sub_steps(uint64_t steps) {
  uint64_t sub = 1;
  while (sub * sub < steps) ++sub;
  return sub;
}

uint64_t delta_rule_backward_columns(uint64_t dk, uint64_t dv) {
  return std::min({kMaxColumns, kSharedVec4s / div_up(2 * dk, 4), dv});
}

DeltaRuleKernelScratch delta_rule_kernel_scratch(const DeltaRuleDims& d) {
  const uint64_t sub = delta_rule_sub_steps(d.steps), subs = div_up(d.steps, sub);
  const uint64_t heads = d.rows * d.Hv;
  const uint64_t blocks = div_up(d.dv, delta_rule_backward_columns(d.dk, d.dv));
  return {4 * heads * (subs + sub) * d.dk * d.dv,
          4 * heads * d.steps * (blocks * 2 * d.dk + 2 * d.dv)};
}

uint64_t delta_rule_forward_workspace_bytes(const DeltaRuleDims& d) {
  return delta_rule_wy_forward_scratch(d.rows, d.Hv, d.dk, d.dv, d.steps);
}

DeltaRuleWorkspaceLayout delta_rule_workspace_layout(const DeltaRuleDims& d) {
  const DeltaRuleWyBackwardScratch k =
      delta_rule_wy_backward_scratch(d.rows, d.Hv, d.dk, d.dv, d.steps);
  DeltaRuleWorkspaceLayout w;
  w.work_bytes = k.work_bytes;
  w.keep_bytes = k.keep_bytes;
  w.partial_bytes = k.partial_bytes;
  w.carry_bytes = 4 * d.rows * d.Hv * d.dk * d.dv;
  w.keep_at = aligned(w.work_bytes);
  w.partials_at = w.keep_at + aligned(w.keep_bytes);
  w.carry_at[0] = w.partials_at + aligned(w.partial_bytes);
  w.carry_at[1] = w.carry_at[0] + aligned(w.carry_bytes);
  w.bytes = w.carry_at[1] + aligned(w.carry_bytes);
  return w;
}

uint64_t delta_rule_workspace_largest_part(const DeltaRuleDims& d) {
  const DeltaRuleWorkspaceLayout w = delta_rule_workspace_layout(d);
  return std::max({delta_rule_forward_workspace_bytes(d), w.work_bytes, w.keep_bytes,
                   w.partial_bytes, w.carry_bytes});
}

const char* delta_chunk_refusal(int chunk) {
  if (chunk < 0) return "must be 0 (the whole sequence) or a positive number of tokens";
  if (chunk % int(kDeltaRuleBlock) != 0)
    return "must be a multiple of 64 tokens (the chunkwise delta rule's block) or 0 for the whole "
           "sequence";
  return "";
}

}  // namespace remat

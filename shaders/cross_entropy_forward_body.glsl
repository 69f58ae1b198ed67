// Included by cross_entropy_forward.comp and its f16/bf16 wrappers (act16.glsl: the logits are an
// activation; losses and dlogits fp32).
#include "act16.glsl"
#include "cross_entropy_params.h"

// Per-position cross-entropy of softmax(logits) against the targets, fused and numerically
// stable: loss = log(sum_v exp(l_v - max)) + max - l_target. The mean over the trained positions
// is the reader's. An ignored target (REMAT_IGNORE_TARGET) gives 0 without reading its row; any
// other target outside the vocabulary gives a NaN loss. Variants: see cross_entropy_rows.glsl.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Logits { ACT_T logits[]; };
layout(std430, binding = 1) readonly buffer Targets { uint targets[]; };
layout(std430, binding = 2) writeonly buffer Losses { float losses[]; };
layout(push_constant) uniform Push { CrossEntropyParams p; };

#include "cross_entropy_rows.glsl"

void main() {
  uint row = ce_row();
  bool inrow = row < p.rows;
  if (ROW_PER_WORKGROUP == 0 && !inrow) return;  // no barriers in this variant
  uint target = inrow ? targets[row] : REMAT_IGNORE_TARGET;
  bool trained = target != REMAT_IGNORE_TARGET;  // else skip the statistics, join the barriers
  uint base = row * p.V;
  float m = ce_row_max(base, trained);
  float s = ce_row_sum(base, m, trained);
  if (!inrow || (ROW_PER_WORKGROUP != 0 && gl_LocalInvocationID.x != 0)) return;
  float loss = 0.0;
  if (!trained) {
  } else if (target < p.V) {
    loss = log(s) + m - LOAD_ACT(logits[base + target]);
  } else {
    loss = uintBitsToFloat(0x7fc00000u);
  }
  losses[row] = loss;
}

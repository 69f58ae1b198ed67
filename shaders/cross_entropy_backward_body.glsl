// Included by cross_entropy_backward.comp and its f16/bf16 wrappers (act16.glsl: the logits are an
// activation; losses and dlogits fp32).
#include "act16.glsl"
#include "cross_entropy_params.h"

// dlogits = scale * (softmax(logits) - onehot(target)), always overwritten: the head's logits
// gradient has no other contribution. Recomputes the row max and sum exactly as the forward
// does (cross_entropy_rows.glsl). An ignored target's row (REMAT_IGNORE_TARGET) is all zeros;
// any other target outside the vocabulary gives a NaN row. The scale is read when the kernel
// runs (cross_entropy_params.h says why).
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Logits { ACT_T logits[]; };
layout(std430, binding = 1) readonly buffer Targets { uint targets[]; };
layout(std430, binding = 2) writeonly buffer DLogits { float dlogits[]; };
layout(std430, binding = 3) readonly buffer Scales { float scales[]; };
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
  if (!inrow) return;
  float scale = scales[p.scale_word];
  float inv = 1.0 / s;
  float bad = target < p.V || !trained ? 0.0 : uintBitsToFloat(0x7fc00000u);
  // 8 per iteration in the serial variant: llvmpipe's loop limit (cross_entropy_rows.glsl).
  uint step = ROW_PER_WORKGROUP != 0 ? 1 : 8;
  for (uint v0 = ce_first() * step; v0 < p.V; v0 += ce_stride() * step) {
    for (uint j = 0; j < step; ++j) {  // unrolled: step is a specialization constant
      uint v = v0 + j;
      if (v >= p.V) break;
      float d = 0.0;
      if (trained) {
        float prob = exp(LOAD_ACT(logits[base + v]) - m) * inv;
        d = scale * (prob - (v == target ? 1.0 : 0.0)) + bad;
      }
      dlogits[base + v] = d;
    }
  }
}

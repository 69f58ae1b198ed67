// The cross-entropy forward's main, included by cross_entropy_forward.comp (storage buffers) and
// cross_entropy_forward_texels.comp (an R32F texel view), which define LOGIT(k) and the bindings.
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
    loss = log(s) + m - LOGIT(base + target);
  } else {
    loss = uintBitsToFloat(0x7fc00000u);
  }
  losses[row] = loss;
}

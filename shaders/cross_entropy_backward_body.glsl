// The cross-entropy backward's main, included by cross_entropy_backward.comp (storage buffers)
// and cross_entropy_backward_texels.comp (an R32F texel view), which define LOGIT(k),
// STORE_DLOGIT(k, d) and the bindings. Where STORE_DLOGIT4(q, d) is defined too (floats 4q..4q+3
// of dlogits at once), the serial variant stores the whole vec4s of each row with it: on
// llvmpipe every store is a per-lane loop, so one vec4 store costs about what one float does.
#include "cross_entropy_rows.glsl"

// The gradient of logit v of a row: the same operations for every store width.
float ce_dlogit(uint base, uint v, uint target, float m, float inv, float scale, float bad,
                bool trained) {
  if (!trained) return 0.0;
  float prob = exp(LOGIT(base + v) - m) * inv;
  return scale * (prob - (v == target ? 1.0 : 0.0)) + bad;
}

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
  float scale = scales[p.scale_word + row * p.scale_stride];
  float inv = 1.0 / s;
  float bad = target < p.V || !trained ? 0.0 : uintBitsToFloat(0x7fc00000u);
#define CE_DLOGIT(v) ce_dlogit(base, v, target, m, inv, scale, bad, trained)
#ifdef STORE_DLOGIT4
  if (ROW_PER_WORKGROUP == 0) {
    // Floats up to the row's first vec4 boundary, then two vec4s per iteration (llvmpipe's loop
    // limit, cross_entropy_rows.glsl), then the rest.
    uint v = 0;
    for (uint head = min((4 - base % 4) % 4, p.V); v < head; ++v)
      STORE_DLOGIT(base + v, CE_DLOGIT(v));
    for (; v + 8 <= p.V; v += 8) {
      uint q = (base + v) / 4;
      STORE_DLOGIT4(q, vec4(CE_DLOGIT(v), CE_DLOGIT(v + 1), CE_DLOGIT(v + 2), CE_DLOGIT(v + 3)));
      STORE_DLOGIT4(q + 1, vec4(CE_DLOGIT(v + 4), CE_DLOGIT(v + 5), CE_DLOGIT(v + 6),
                                CE_DLOGIT(v + 7)));
    }
    for (; v < p.V; ++v) STORE_DLOGIT(base + v, CE_DLOGIT(v));
    return;
  }
#endif
  // 8 per iteration in the serial variant: llvmpipe's loop limit (cross_entropy_rows.glsl).
  uint step = ROW_PER_WORKGROUP != 0 ? 1 : 8;
  for (uint v0 = ce_first() * step; v0 < p.V; v0 += ce_stride() * step) {
    for (uint j = 0; j < step; ++j) {  // unrolled: step is a specialization constant
      uint v = v0 + j;
      if (v >= p.V) break;
      STORE_DLOGIT(base + v, CE_DLOGIT(v));
    }
  }
#undef CE_DLOGIT
}

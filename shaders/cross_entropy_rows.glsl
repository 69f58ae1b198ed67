// Row statistics shared by the cross-entropy forward and backward bodies, so the forward and the
// backward see the same max and sum bit for bit. Expects LOGIT(k) (the k-th float of the logits,
// from a storage buffer or a texel view), push constants `p` (CrossEntropyParams) and the
// specialization constant ROW_PER_WORKGROUP.
//
// ROW_PER_WORKGROUP 0: one invocation per row, serial loops. No barriers, which suits CPU
//   implementations (lavapipe runs a workgroup's invocations as coroutines, so each barrier is a
//   context switch) and is enough parallelism when BT is in the hundreds.
// ROW_PER_WORKGROUP 1: one workgroup per row; invocation i takes v = i, i + WG, ... in order and
//   the partial results are combined by a fixed tree in shared memory. For GPUs.
// Both orders are fixed, so every run is bit-identical.
//
// The serial loops take 8 elements per iteration because llvmpipe (lavapipe) ends any
// invocation after 65535 loop iterations in total, silently: its loop limiter
// (LP_MAX_TGSI_LOOP_ITERATIONS) is one counter per shader function. A plain loop over GPT-2's
// 50257 logits, run three times, would be cut short.

layout(constant_id = 3) const uint ROW_PER_WORKGROUP = 0;
const uint MAX_GROUP = 256;  // the workgroup variant's size limit (the dispatch builder's)
shared float partial[MAX_GROUP];

// The row this invocation works on (a workgroup's row in variant 1; 2-D grid for many rows).
uint ce_row() {
  uint flat_group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  return ROW_PER_WORKGROUP != 0 ? flat_group
                                : flat_group * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
}

// First index and stride this invocation takes within a row.
uint ce_first() { return ROW_PER_WORKGROUP != 0 ? gl_LocalInvocationID.x : 0; }
uint ce_stride() { return ROW_PER_WORKGROUP != 0 ? gl_WorkGroupSize.x : 1; }

// Fixed-shape tree over `partial`: after it every invocation reads the same total in
// partial[0]. Max or sum by `is_max`. Workgroup variant only (it contains barriers).
float ce_tree(float value, bool is_max) {
  uint i = gl_LocalInvocationID.x;
  partial[i] = value;
  barrier();
  for (uint width = gl_WorkGroupSize.x; width > 1;) {
    uint half_width = (width + 1) / 2;
    if (i < width - half_width) {
      float a = partial[i], b = partial[i + half_width];
      partial[i] = is_max ? max(a, b) : a + b;
    }
    barrier();
    width = half_width;
  }
  float total = partial[0];
  barrier();  // partial[] is reused by the next call
  return total;
}

// Max over the row (inrow: the row exists and is trained; invocations of a missing or ignored row
// still join the barriers).
float ce_row_max(uint base, bool inrow) {
  float m = -3.402823466e38;
  if (!inrow) {
  } else if (ROW_PER_WORKGROUP != 0) {
    for (uint v = ce_first(); v < p.V; v += ce_stride()) m = max(m, LOGIT(base + v));
  } else {
    uint v = 0;
    for (; v + 8 <= p.V; v += 8) {
      uint k = base + v;
      float a = max(max(LOGIT(k), LOGIT(k + 1)), max(LOGIT(k + 2), LOGIT(k + 3)));
      float b = max(max(LOGIT(k + 4), LOGIT(k + 5)), max(LOGIT(k + 6), LOGIT(k + 7)));
      m = max(m, max(a, b));
    }
    for (; v < p.V; ++v) m = max(m, LOGIT(base + v));
  }
  return ROW_PER_WORKGROUP != 0 ? ce_tree(m, true) : m;
}

// sum_v exp(logit v - m).
float ce_row_sum(uint base, float m, bool inrow) {
  float s = 0.0;
  if (!inrow) {
  } else if (ROW_PER_WORKGROUP != 0) {
    for (uint v = ce_first(); v < p.V; v += ce_stride()) s += exp(LOGIT(base + v) - m);
  } else {
    uint v = 0;
    for (; v + 8 <= p.V; v += 8) {
      uint k = base + v;
      float a = (exp(LOGIT(k) - m) + exp(LOGIT(k + 1) - m)) +
                (exp(LOGIT(k + 2) - m) + exp(LOGIT(k + 3) - m));
      float b = (exp(LOGIT(k + 4) - m) + exp(LOGIT(k + 5) - m)) +
                (exp(LOGIT(k + 6) - m) + exp(LOGIT(k + 7) - m));
      s += a + b;
    }
    for (; v < p.V; ++v) s += exp(LOGIT(base + v) - m);
  }
  return ROW_PER_WORKGROUP != 0 ? ce_tree(s, false) : s;
}

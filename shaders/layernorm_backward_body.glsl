// Included by layernorm_backward.comp and layernorm_backward_texels.comp, which bind dy, x, w,
// mean and rstd (bindings 0-4) as storage buffers or R32F texel views and define DY(i), X(i),
// W(i), MEAN(i), RSTD(i).
//
// LayerNorm backward in one dispatch with two kinds of invocation, neither of which waits on
// the other (both only read dy, x, w, mean, rstd):
//   invocations [0, rows):         one row each, dx = rstd * (g - mean(g) - n * mean(g * n)),
//                                  where n = (x - mean) * rstd and g = dy * w;
//   invocations [row_groups * WG, ...): one channel each, dw[c] = sum_rows dy * n and
//                                  db[c] = sum_rows dy, summed over rows 0, 1, 2, ... in order.
// The reductions over BT are per-channel serial loops instead of atomics or a cross-workgroup
// tree, so the order is fixed and two runs are bit-identical. Rows and channels start at
// workgroup boundaries so no workgroup mixes the two roles.
// Accumulation: the accumulator starts from the existing value (accumulate = 1) or 0 and the
// contributions are added in row order.
layout(local_size_x_id = 0) in;

layout(std430, binding = 5) buffer DX { float dx[]; };
layout(std430, binding = 6) buffer DW { float dw[]; };
layout(std430, binding = 7) buffer DB { float db[]; };
layout(push_constant) uniform Push { LayernormBackwardParams p; };

void row_gradient(uint row) {
  uint base = row * p.C;
  float m = MEAN(row);
  float r = RSTD(row);
  float g_sum = 0.0;
  float gn_sum = 0.0;
  for (uint c = 0; c < p.C; ++c) {
    float g = DY(base + c) * W(c);
    float n = (X(base + c) - m) * r;
    g_sum += g;
    gn_sum = fma(g, n, gn_sum);
  }
  float g_mean = g_sum / float(p.C);
  float gn_mean = gn_sum / float(p.C);
  for (uint c = 0; c < p.C; ++c) {
    float g = DY(base + c) * W(c);
    float n = (X(base + c) - m) * r;
    float v = (g - g_mean - n * gn_mean) * r;
    dx[base + c] = p.accumulate_dx != 0 ? dx[base + c] + v : v;
  }
}

void add_row(uint row, uint c, inout float acc_w, inout float acc_b) {
  float d = DY(row * p.C + c);
  float n = (X(row * p.C + c) - MEAN(row)) * RSTD(row);
  acc_w += d * n;
  acc_b += d;
}

void channel_gradient(uint c) {
  float acc_w = p.accumulate_dw != 0 ? dw[c] : 0.0;
  float acc_b = p.accumulate_dw != 0 ? db[c] : 0.0;
  // Four rows per iteration (still added one at a time, in order) because llvmpipe ends an
  // invocation after 65535 loop iterations in total (its LP_MAX_TGSI_LOOP_ITERATIONS limiter),
  // and BT reaches 65536 at B=64, T=1024.
  uint row = 0;
  for (; row + 4 <= p.rows; row += 4) {
    add_row(row, c, acc_w, acc_b);
    add_row(row + 1, c, acc_w, acc_b);
    add_row(row + 2, c, acc_w, acc_b);
    add_row(row + 3, c, acc_w, acc_b);
  }
  for (; row < p.rows; ++row) add_row(row, c, acc_w, acc_b);
  dw[c] = acc_w;
  db[c] = acc_b;
}

void main() {
  uint i = gl_GlobalInvocationID.x;
  uint wg = gl_WorkGroupSize.x;
  uint row_invocations = ((p.rows + wg - 1) / wg) * wg;
  if (i < row_invocations) {
    if (i < p.rows) row_gradient(i);
  } else {
    uint c = i - row_invocations;
    if (c < p.C) channel_gradient(c);
  }
}

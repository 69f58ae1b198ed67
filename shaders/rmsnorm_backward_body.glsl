// Included by rmsnorm_backward.comp and rmsnorm_backward_texels.comp, which bind dy, x, w and
// rstd (bindings 0-3) as storage buffers or R32F texel views and define DY(i), X(i), W(i),
// RSTD(i).
//
// RMSNorm backward in one dispatch with two kinds of invocation, neither of which waits on the
// other (both only read dy, x, w, rstd), as layernorm_backward_body.glsl:
//   invocations [0, rows):               one row each, dx = rstd * (g - n * mean(g * n)),
//                                        where n = x * rstd and g = dy * gain (w, or 1 + w);
//   invocations [row_groups * WG, ...):  one channel each, dw[c] = sum_rows dy * n, summed over
//                                        rows 0, 1, 2, ... in order.
// The reduction over rows is a per-channel serial loop instead of atomics or a cross-workgroup
// tree, so the order is fixed and two runs are bit-identical. x and dx rows are x_stride floats
// apart (dense: C); dx's floats between rows are not touched. Accumulation: the accumulator
// starts from the existing value (accumulate = 1) or 0 and the rows are added in order.
layout(local_size_x_id = 0) in;

layout(std430, binding = 4) buffer DX { float dx[]; };
layout(std430, binding = 5) buffer DW { float dw[]; };
layout(push_constant) uniform Push { RmsnormBackwardParams p; };

// The gain of channel c: w, or Gemma's 1 + w (as rmsnorm_forward_body.glsl). dw is the same
// either way: d(1 + w)/dw = 1.
float gain(uint c) { return p.unit_offset != 0 ? 1.0 + W(c) : W(c); }

void row_gradient(uint row) {
  uint base = row * p.C, xbase = row * p.x_stride;
  float r = RSTD(row);
  float gn_sum = 0.0;
  for (uint c = 0; c < p.C; ++c) gn_sum = fma(DY(base + c) * gain(c), X(xbase + c) * r, gn_sum);
  float gn_mean = gn_sum / float(p.C);
  for (uint c = 0; c < p.C; ++c) {
    float g = DY(base + c) * gain(c);
    float n = X(xbase + c) * r;
    float v = (g - n * gn_mean) * r;
    dx[xbase + c] = p.accumulate_dx != 0 ? dx[xbase + c] + v : v;
  }
}

float row_term(uint row, uint c) {
  return DY(row * p.C + c) * (X(row * p.x_stride + c) * RSTD(row));
}

void channel_gradient(uint c) {
  float acc = p.accumulate_dw != 0 ? dw[c] : 0.0;
  // Four rows per iteration (still added one at a time, in order): llvmpipe ends an invocation
  // after 65535 loop iterations in total (DeviceQuirks::max_loop_iterations), and rows reach
  // 65536 at B=64, T=1024.
  uint row = 0;
  for (; row + 4 <= p.rows; row += 4) {
    acc += row_term(row, c);
    acc += row_term(row + 1, c);
    acc += row_term(row + 2, c);
    acc += row_term(row + 3, c);
  }
  for (; row < p.rows; ++row) acc += row_term(row, c);
  dw[c] = acc;
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

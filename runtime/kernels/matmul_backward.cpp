#include "runtime/kernels/matmul_backward.h"

#include "matmul_backward_params.h"

namespace remat::kernels {

namespace {

// A workgroup covers `rows` uniform rows x (wx * cols) interleaved columns (see the shaders).
// CPU drivers vectorise across invocations and pay per lane for non-uniform loads, so they get
// tall tiles (more uniform loads per per-lane load); GPUs get square-ish ones.
struct Tile {
  uint32_t rows, cols, wx;
};
Tile tile(const DeviceQuirks& q) {
  return q.barriers_are_expensive ? Tile{8, 2, 64} : Tile{4, 2, 64};
}
constexpr uint32_t kBiasGroup = 64;

push::MatmulBackwardParams params(const MatmulShape& s, GradWrite mode) {
  return {s.M, s.N, s.K, static_cast<uint32_t>(s.layout), static_cast<uint32_t>(mode)};
}

}  // namespace

Dispatch matmul_backward_input(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice dout,
                               BufferSlice w, BufferSlice dinp, GradWrite mode) {
  const Tile t = tile(quirks);
  Dispatch d;
  // CPU drivers: four n per load where the rows of W are contiguous in n (same bits as below).
  const bool vec4 = quirks.barriers_are_expensive && s.layout == WeightLayout::in_out && s.N % 4 == 0;
  d.kernel = vec4 ? KernelId::matmul_backward_input_vec4 : KernelId::matmul_backward_input;
  d.spec = {t.wx, 1, 1, t.rows, t.cols};
  d.bindings = {{dout, false}, {w, false}, {dinp, true}};
  d.push = push_bytes(params(s, mode));
  d.groups = {div_up(s.K, t.wx * t.cols), div_up(s.M, t.rows), 1};
  d.label = "matmul_backward_input";
  return d;
}

Dispatch matmul_backward_weight(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice dout,
                                BufferSlice inp, BufferSlice dw, GradWrite mode) {
  Dispatch d;
  if (quirks.barriers_are_expensive && s.layout == WeightLayout::in_out && s.N % 4 == 0 &&
      s.K % 4 == 0) {
    // CPU drivers: vec4 loads on both sides (same bits as the scalar kernel).
    constexpr uint32_t tk = 8, tn4 = 2, wx = 8;
    d.kernel = KernelId::matmul_backward_weight_vec4;
    d.spec = {wx, 1, 1, tk, tn4};
    d.bindings = {{dout, false}, {inp, false}, {dw, true}};
    d.push = push_bytes(params(s, mode));
    d.groups = {div_up(s.N / 4, wx * tn4), div_up(s.K, tk), 1};
    d.label = "matmul_backward_weight";
    return d;
  }
  const Tile t = tile(quirks);
  d.kernel = KernelId::matmul_backward_weight;
  d.spec = {t.wx, 1, 1, t.rows, t.cols};
  d.bindings = {{dout, false}, {inp, false}, {dw, true}};
  d.push = push_bytes(params(s, mode));
  d.groups = {div_up(s.N, t.wx * t.cols), div_up(s.K, t.rows), 1};
  d.label = "matmul_backward_weight";
  return d;
}

Dispatch matmul_backward_bias(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice dout,
                              BufferSlice dbias, GradWrite mode) {
  (void)quirks;  // one variant: a column per invocation suits every device
  Dispatch d;
  d.kernel = KernelId::matmul_backward_bias;
  d.spec = {kBiasGroup};
  d.bindings = {{dout, false}, {dbias, true}};
  d.push = push_bytes(params(s, mode));
  d.groups = {div_up(s.N, kBiasGroup), 1, 1};
  d.label = "matmul_backward_bias";
  return d;
}

}  // namespace remat::kernels

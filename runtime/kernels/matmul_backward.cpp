#include "runtime/kernels/matmul_backward.h"

#include <stdexcept>

#include "matmul_backward_params.h"
#include "runtime/kernels/kernel_variants.h"
#include "runtime/kernels/matmul_reduction_blocks.h"
#include "runtime/kernels/matmul_texels.h"

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

// MatmulBackwardParams.accumulate for a later piece of W's rows: continue the earlier pieces' sum.
constexpr uint32_t kContinue = 2;

push::MatmulBackwardParams params(const MatmulShape& s, uint32_t accumulate) {
  return {s.M, s.N, s.K, static_cast<uint32_t>(s.layout), accumulate, s.row_stride(), s.n_offset};
}
push::MatmulBackwardParams params(const MatmulShape& s, GradWrite mode) {
  return params(s, static_cast<uint32_t>(mode));
}

// The vec4 kernels read dout four columns at a time: its stride and offset must keep them aligned.
bool dout_aligned4(const MatmulShape& s) {
  return s.N % 4 == 0 && s.row_stride() % 4 == 0 && s.n_offset % 4 == 0;
}

Dispatch backward_input(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice dout,
                        BufferSlice w, BufferSlice dinp, uint32_t accumulate) {
  // CPU drivers: operands through texel views (see matmul_texels.h).
  if (auto texels = matmul_backward_input_texels(quirks, s, dout, w, dinp, accumulate))
    return *texels;
  const Tile t = tile(quirks);
  Dispatch d;
  // CPU drivers: four n per load where the rows of W are contiguous in n (same bits as below).
  const bool vec4 =
      quirks.barriers_are_expensive && s.layout == WeightLayout::in_out && dout_aligned4(s);
  d.kernel =
      kernel_variant(vec4 ? KernelId::matmul_backward_input_vec4 : KernelId::matmul_backward_input,
                     {DType::f32, s.w_dtype});
  d.spec = {t.wx, 1, 1, t.rows, t.cols};
  d.bindings = {{dout, false}, {w, false}, {dinp, true}};
  d.push = push_bytes(params(s, accumulate));
  d.groups = {div_up(s.K, t.wx * t.cols), div_up(s.M, t.rows), 1};
  d.label = "matmul_backward_input";
  return d;
}

}  // namespace

Dispatch matmul_backward_input(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice dout,
                               BufferSlice w, BufferSlice dinp, GradWrite mode) {
  return backward_input(quirks, s, dout, w, dinp, static_cast<uint32_t>(mode));
}

std::vector<Dispatch> matmul_backward_input_pieces(const DeviceQuirks& quirks, const MatmulShape& s,
                                                   BufferSlice dout, BufferSlice w,
                                                   BufferSlice dinp, GradWrite mode) {
  // A long reduction (the tied head's vocabulary) runs in cache-sized blocks of it.
  const auto pieces = weight_pieces(quirks, s);
  if (pieces.size() == 1)
    return split_long_reduction(quirks, matmul_backward_input(quirks, s, dout, w, dinp, mode));
  std::vector<Dispatch> ds;
  for (std::size_t i = 0; i < pieces.size(); ++i)
    for (Dispatch& d : split_long_reduction(
             quirks, backward_input(quirks, piece_shape(s, pieces[i]), dout,
                                    piece_of(w, pieces[i], s.w_row_bytes()), dinp,
                                    i == 0 ? static_cast<uint32_t>(mode) : kContinue)))
      ds.push_back(std::move(d));
  return ds;
}

Dispatch matmul_backward_weight(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice dout,
                                BufferSlice inp, BufferSlice dw, GradWrite mode) {
  if (s.w_dtype != DType::f32)  // only frozen weights are stored in 16 bits, and they get no dW
    throw std::logic_error("matmul_backward_weight: a weight's gradient is f32, not " +
                           std::string(dtype_name(s.w_dtype)));
  if (auto texels =
          matmul_backward_weight_texels(quirks, s, dout, inp, dw, static_cast<uint32_t>(mode)))
    return *texels;
  Dispatch d;
  if (quirks.barriers_are_expensive && s.layout == WeightLayout::in_out && dout_aligned4(s) &&
      s.K % 4 == 0) {
    // CPU drivers: vec4 loads on both sides (same bits as the scalar kernel).
    constexpr uint32_t tk = 8, tn4 = 2, wx = 8;
    d.kernel = kernel_variant(KernelId::matmul_backward_weight_vec4, {DType::f32, s.x_dtype});
    d.spec = {wx, 1, 1, tk, tn4};
    d.bindings = {{dout, false}, {inp, false}, {dw, true}};
    d.push = push_bytes(params(s, mode));
    d.groups = {div_up(s.N / 4, wx * tn4), div_up(s.K, tk), 1};
    d.label = "matmul_backward_weight";
    return d;
  }
  const Tile t = tile(quirks);
  d.kernel = kernel_variant(KernelId::matmul_backward_weight, {DType::f32, s.x_dtype});
  d.spec = {t.wx, 1, 1, t.rows, t.cols};
  d.bindings = {{dout, false}, {inp, false}, {dw, true}};
  d.push = push_bytes(params(s, mode));
  d.groups = {div_up(s.N, t.wx * t.cols), div_up(s.K, t.rows), 1};
  d.label = "matmul_backward_weight";
  return d;
}

std::vector<Dispatch> matmul_backward_weight_pieces(const DeviceQuirks& quirks,
                                                    const MatmulShape& s, BufferSlice dout,
                                                    BufferSlice inp, BufferSlice dw,
                                                    GradWrite mode) {
  const auto pieces = weight_pieces(quirks, s);
  if (pieces.size() == 1) return {matmul_backward_weight(quirks, s, dout, inp, dw, mode)};
  std::vector<Dispatch> ds;
  for (const Piece& p : pieces)  // disjoint rows of dW: each piece is the unsplit computation
    ds.push_back(matmul_backward_weight(quirks, piece_shape(s, p), dout, inp,
                                        piece_of(dw, p, uint64_t(s.K) * sizeof(float)), mode));
  return ds;
}

std::vector<Dispatch> matmul_backward_weight_bias_pieces(const DeviceQuirks& quirks,
                                                         const MatmulShape& s, BufferSlice dout,
                                                         BufferSlice inp, BufferSlice dw,
                                                         GradWrite mode, BufferSlice dbias,
                                                         GradWrite bias_mode) {
  if (s.w_dtype != DType::f32)
    throw std::logic_error("matmul_backward_weight: a weight's gradient is f32, not " +
                           std::string(dtype_name(s.w_dtype)));
  // A bias-grad dispatch of its own costs a whole dispatch for a few KiB of output on CPU
  // drivers (and reads dout through storage loads): the dW kernel's workgroups sum it instead.
  if (quirks.bias_grad_in_weight_grad && weight_pieces(quirks, s).size() == 1)
    if (auto d = matmul_backward_weight_bias_texels(quirks, s, dout, inp, dw,
                                                    static_cast<uint32_t>(mode), dbias,
                                                    static_cast<uint32_t>(bias_mode)))
      return {*d};
  auto ds = matmul_backward_weight_pieces(quirks, s, dout, inp, dw, mode);
  ds.push_back(matmul_backward_bias(quirks, s, dout, dbias, bias_mode));
  return ds;
}

Dispatch matmul_backward_bias(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice dout,
                              BufferSlice dbias, GradWrite mode) {
  (void)quirks;  // one variant: a column per invocation suits every device
  if (s.row_stride() != s.N || s.n_offset != 0)
    throw std::logic_error("matmul_backward_bias reads whole rows of dout, not a piece of them");
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

#include "runtime/kernels/matmul.h"

#include <stdexcept>

#include "push_constants.h"
#include "runtime/kernels/binding_pieces.h"
#include "runtime/kernels/kernel_variants.h"
#include "runtime/kernels/matmul_texels.h"
#include "runtime/kernels/residual.h"

namespace remat::kernels {

Dispatch matmul_forward(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice inp,
                        BufferSlice w, BufferSlice bias, BufferSlice out) {
  // CPU drivers: operands through texel views, 4-8x faster there (see matmul_texels.h).
  if (auto texels = matmul_forward_texels(quirks, s, inp, w, bias, out)) return *texels;
  const bool has_bias = bias.buffer != VK_NULL_HANDLE;
  Dispatch d;
  d.bindings = {{inp, false}, {w, false}, {has_bias ? bias : w, false}, {out, true}};
  d.push = push_bytes(push::MatmulParams{s.M, s.N, s.K, static_cast<uint32_t>(s.layout),
                                         has_bias ? 1u : 0u, s.row_stride(), s.n_offset});
  d.label = "matmul_forward";
  // The vec4 kernel stores four columns at a time, so the output's stride and offset must keep
  // them aligned too.
  const bool aligned4 = s.N % 4 == 0 && s.row_stride() % 4 == 0 && s.n_offset % 4 == 0;
  if (quirks.barriers_are_expensive && s.layout == WeightLayout::in_out && aligned4) {
    // CPU drivers: four contiguous columns per vec4 load (see matmul_forward_vec4.comp).
    // 8 rows x 8 columns per invocation measured fastest on llvmpipe at 256^3 and 1024^3.
    const uint32_t tm = 8, tn4 = 2, wx = 8;
    d.kernel = kernel_variant(KernelId::matmul_forward_vec4, {s.x_dtype, s.w_dtype, s.y_dtype});
    d.spec = {wx, 1, 1, tm, tn4};
    d.groups = {div_up(s.N / 4, wx * tn4), div_up(s.M, tm), 1};
    return d;
  }
  // A workgroup covers TM rows x (WX * TN) columns. CPU drivers vectorise across 8 invocations
  // and pay per lane for non-uniform loads, so they get tall tiles (more uniform A loads per
  // W load); GPUs get a wider workgroup.
  const uint32_t tm = quirks.barriers_are_expensive ? 8 : 4;
  const uint32_t tn = quirks.barriers_are_expensive ? 4 : 2;
  const uint32_t wx = quirks.barriers_are_expensive ? 8 : 64;
  d.kernel = kernel_variant(KernelId::matmul_forward, {s.x_dtype, s.w_dtype, s.y_dtype});
  d.spec = {wx, 1, 1, tm, tn};
  d.groups = {div_up(s.N, wx * tn), div_up(s.M, tm), 1};
  return d;
}

std::vector<Piece> weight_pieces(const DeviceQuirks& quirks, const MatmulShape& s) {
  // An (in, out) weight's rows run over K, not N: a piece of its N columns is not contiguous.
  // It stays whole, and a too-large one is refused where bindings are checked (Session,
  // Executor) rather than here.
  if (s.layout == WeightLayout::in_out) return {{0, s.N}};
  return binding_pieces(quirks, s.N, s.w_row_bytes(), "matmul");
}

MatmulShape piece_shape(const MatmulShape& whole, const Piece& p) {
  MatmulShape s = whole;
  s.N = p.count;
  s.ld = whole.row_stride();
  s.n_offset = whole.n_offset + p.begin;
  return s;
}

std::vector<Dispatch> matmul_forward_pieces(const DeviceQuirks& quirks, const MatmulShape& s,
                                            BufferSlice inp, BufferSlice w, BufferSlice bias,
                                            BufferSlice out, BufferSlice residual) {
  const auto pieces = weight_pieces(quirks, s);
  const bool adds = residual.buffer != VK_NULL_HANDLE;
  if (pieces.size() == 1 && adds)
    if (auto fused = matmul_forward_texels(quirks, s, inp, w, bias, out, residual)) return {*fused};
  std::vector<Dispatch> ds;
  if (pieces.size() == 1)
    ds.push_back(matmul_forward(quirks, s, inp, w, bias, out));
  else
    for (const Piece& p : pieces)
      ds.push_back(matmul_forward(quirks, piece_shape(s, p), inp, piece_of(w, p, s.w_row_bytes()),
                                  bias, out));
  return adds ? then_add_residual(quirks, s, std::move(ds), residual, out) : ds;
}

std::vector<Dispatch> then_add_residual(const DeviceQuirks& quirks, const MatmulShape& s,
                                        std::vector<Dispatch> matmul, BufferSlice residual,
                                        BufferSlice out) {
  if (s.row_stride() != s.N || s.n_offset != 0)
    throw std::logic_error("matmul: a fused residual needs the whole output");
  // y = a + 1.0 * b with b the matmul's output, each element read before it is written by the
  // same invocation: the residual op's bits.
  matmul.push_back(residual_forward(quirks, s.M * s.N, residual, out, out, 1.0f, s.y_dtype));
  return matmul;
}

}  // namespace remat::kernels

#include "runtime/kernels/matmul_texels.h"

#include <cstring>
#include <stdexcept>

#include "matmul_texels_params.h"
#include "runtime/kernels/kernel_variants.h"
#include "runtime/kernels/vec4_texels.h"

namespace remat::kernels {

namespace {

// matmul_outer_texels.comp's X_MODE.
enum class XMode : uint32_t {
  vec4_along_r = 0,
  vec4_along_i = 1,
  scalar = 2,
  shifted_vec4_along_r = 3,
  shifted_vec4_along_i = 4
};

bool div4(uint64_t v) {
  return v % 4 == 0;
}

// A texel view of a whole operand of dtype `t`, four elements per texel or one.
Binding texels(BufferSlice s, bool vec4, DType t = DType::f32) {
  return {s, false, texel_format(t, vec4)};
}

// The operand an outer-product dispatch reads as X: its element strides and offset.
struct XOperand {
  BufferSlice slice;
  uint32_t offset, si, sr;
  DType dtype = DType::f32;  // an activation may be stored in 16 bits
};

// X's fetch mode: aligned vec4 where the contiguous axis, the other stride and the offset allow
// it; else shifted vec4 (two texels per four floats, half the fetches of one float at a time)
// where X's binding is a whole number of vec4 texels (the tied head's dlogits rows are V = 50257
// floats apart); else one float at a time.
XMode x_mode(const XOperand& x, uint32_t I, uint32_t R) {
  if (x.sr == 1 && div4(R) && div4(x.si) && div4(x.offset)) return XMode::vec4_along_r;
  if (x.si == 1 && I >= 4 && div4(I) && div4(x.sr) && div4(x.offset)) return XMode::vec4_along_i;
  if (x.slice.size % (4 * uint64_t(dtype_bytes(x.dtype))) != 0) return XMode::scalar;
  if (x.sr == 1) return XMode::shifted_vec4_along_r;
  if (x.si == 1) return XMode::shifted_vec4_along_i;
  return XMode::scalar;
}

// The tile for this shape on this device: the class's measured tile, or the device's default
// where that one cannot run the fetch mode.
MatmulTile tile_for(const MatmulTiling& tiling, TexelMatmul kernel, uint32_t mode, uint32_t I,
                    uint32_t J, uint32_t R) {
  const MatmulTile t = tiling.tile(matmul_class(kernel, mode, I, J, R));
  if (matmul_tile_fits(kernel, mode, t)) return t;
  const MatmulTiling fallback = default_matmul_tiling(0);
  return kernel == TexelMatmul::outer ? fallback.outer : fallback.dot;
}

// The X_LANES constant of a dispatch with tile `t` in mode `mode` (shaders/shared_x.glsl): the
// lanes sharing X's fetches, 1 for none.
uint32_t x_lanes(uint32_t lanes, const MatmulTile& t, TexelMatmul kernel, uint32_t mode) {
  const bool mode_shares = kernel == TexelMatmul::dot || mode != 2;
  if (lanes < 2 || !mode_shares || t.rows % lanes != 0 || t.wx % lanes != 0) return 1;
  return lanes;
}

// Y's bytes and storage type: a weight may be stored in 16 bits (kernel_variants.h).
struct YOperand {
  BufferSlice slice;
  DType dtype = DType::f32;
};

// MatmulTexelsParams.has_bias: what the outer kernel does with binding 2.
constexpr uint32_t kAddBias = 1;          // C += bias[j] (the forward's bias)
constexpr uint32_t kWriteColumnSums = 2;  // bias[j] = sum_r Y[r, j] (a bias gradient)
constexpr uint32_t kAddColumnSums = 3;    // bias[j] += sum_r Y[r, j]

// C(I,J) (+)= X(I,R) · Y[R,J] with Y and C vec4 along j (the caller checks J, Y's and C's strides).
// `bias` is read (bias_mode kAddBias) or, for the column sums, written by one more row of
// workgroups. `residual` (f32, in C's layout, C f32 and overwritten): C = residual + the sum.
Dispatch outer(const MatmulTiling& tiling, uint32_t I, uint32_t J, uint32_t R, const XOperand& x,
               YOperand y, uint32_t y_stride, BufferSlice bias, BufferSlice c, uint32_t c_offset,
               uint32_t ldc, uint32_t accumulate, DType c_dtype = DType::f32,
               uint32_t bias_mode = kAddBias, BufferSlice residual = {}) {
  const XMode mode = x_mode(x, I, R);
  const auto m = static_cast<uint32_t>(mode);
  const MatmulTile t = tile_for(tiling, TexelMatmul::outer, m, I, J, R);
  const bool has_bias = bias.buffer != VK_NULL_HANDLE;
  const bool sums = has_bias && bias_mode != kAddBias;
  Dispatch d;
  d.kernel = kernel_variant(KernelId::matmul_outer_texels, {x.dtype, y.dtype, c_dtype});
  d.spec = {
      t.wx, 1, 1, t.rows, t.cols, m, x_lanes(tiling.shared_x_lanes, t, TexelMatmul::outer, m)};
  const bool adds = residual.buffer != VK_NULL_HANDLE;
  if (adds && (c_dtype != DType::f32 || accumulate != 0 || sums))
    throw std::logic_error("matmul texels: a fused residual needs an f32 C it overwrites");
  // Without a residual, binding 4 is a stand-in: C's first texel, never read.
  const BufferSlice res = adds ? residual : BufferSlice{c.buffer, c.offset, 16};
  d.bindings = {texels(x.slice, mode != XMode::scalar, x.dtype),
                texels(y.slice, true, y.dtype),
                {has_bias ? bias : c, sums},
                {c, true},
                {res, false, VK_FORMAT_R32G32B32A32_SFLOAT}};
  d.push =
      push_bytes(push::MatmulTexelsParams{I, J, R, x.offset, x.si, x.sr, y_stride, c_offset, ldc,
                                          accumulate, has_bias ? bias_mode : 0u, adds ? 1u : 0u});
  d.groups = {div_up(J / 4, t.wx * t.cols), div_up(I, t.rows) + (sums ? 1 : 0), 1};
  return d;
}

// C(I,J) (+)= X[I,R] · Y[J,R]^T, both vec4 along r (the caller checks R and the strides).
Dispatch dot(const MatmulTiling& tiling, uint32_t I, uint32_t J, uint32_t R, YOperand x,
             uint32_t x_offset, uint32_t x_si, YOperand y, uint32_t y_stride, BufferSlice bias,
             BufferSlice c, uint32_t c_offset, uint32_t ldc, uint32_t accumulate,
             DType c_dtype = DType::f32) {
  const MatmulTile t = tile_for(tiling, TexelMatmul::dot, 0, I, J, R);
  const bool has_bias = bias.buffer != VK_NULL_HANDLE;
  Dispatch d;
  d.kernel = kernel_variant(KernelId::matmul_dot_texels, {x.dtype, y.dtype, c_dtype});
  d.spec = {t.wx, 1, 1, t.rows, t.cols, x_lanes(tiling.shared_x_lanes, t, TexelMatmul::dot, 0)};
  d.bindings = {texels(x.slice, true, x.dtype),
                texels(y.slice, true, y.dtype),
                {has_bias ? bias : c, false},
                {c, true}};
  d.push = push_bytes(push::MatmulTexelsParams{I, J, R, x_offset, x_si, 1, y_stride, c_offset, ldc,
                                               accumulate, has_bias ? 1u : 0u, 0u});
  d.groups = {div_up(J, t.wx * t.cols), div_up(I, t.rows), 1};
  return d;
}

// The variant for s.layout, where the quirk is set and the shape is not empty; `label` names it.
template <class InOut, class OutIn>
std::optional<Dispatch> by_layout(const DeviceQuirks& quirks, const MatmulShape& s,
                                  const char* label, InOut in_out, OutIn out_in) {
  if (!quirks.texel_fetch_beats_storage_loads || s.M == 0 || s.N == 0 || s.K == 0) return {};
  std::optional<Dispatch> d = s.layout == WeightLayout::in_out ? in_out() : out_in();
  if (d) d->label = label;
  return d;
}

}  // namespace

std::optional<Dispatch> matmul_forward_texels(const DeviceQuirks& quirks, const MatmulShape& s,
                                              BufferSlice inp, BufferSlice w, BufferSlice bias,
                                              BufferSlice out, BufferSlice residual) {
  const uint32_t ld = s.row_stride();
  const bool adds = residual.buffer != VK_NULL_HANDLE;
  return by_layout(
      quirks, s, "matmul_forward",
      [&]() -> std::optional<Dispatch> {
        // out(m,n) = sum_k inp[m,k] W[k,n]: Y = W, vec4 along n.
        if (!div4(s.N) || !div4(ld) || !div4(s.n_offset)) return {};
        // The residual is fused where it shares C's layout: f32, a whole matrix.
        if (adds && (s.y_dtype != DType::f32 || ld != s.N || s.n_offset != 0 ||
                     residual.offset % kTexelAlignment != 0))
          return {};
        return outer(quirks.matmul_tiling, s.M, s.N, s.K, {inp, 0, s.K, 1, s.x_dtype},
                     {w, s.w_dtype}, s.N, bias, out, s.n_offset, ld, 0, s.y_dtype, kAddBias,
                     residual);
      },
      [&]() -> std::optional<Dispatch> {
        // out(m,n) = sum_k inp[m,k] W[n,k]: both contiguous in k.
        if (!div4(s.K) || adds) return {};
        return dot(quirks.matmul_tiling, s.M, s.N, s.K, {inp, s.x_dtype}, 0, s.K, {w, s.w_dtype},
                   s.K, bias, out, s.n_offset, ld, 0, s.y_dtype);
      });
}

std::optional<Dispatch> matmul_backward_input_texels(const DeviceQuirks& quirks,
                                                     const MatmulShape& s, BufferSlice dout,
                                                     BufferSlice w, BufferSlice dinp,
                                                     uint32_t accumulate) {
  const uint32_t ld = s.row_stride();
  return by_layout(
      quirks, s, "matmul_backward_input",
      [&]() -> std::optional<Dispatch> {
        // dinp(m,k) = sum_n dout[m,n] W[k,n]: both contiguous in n.
        if (!div4(s.N) || !div4(ld) || !div4(s.n_offset)) return {};
        return dot(quirks.matmul_tiling, s.M, s.K, s.N, {dout}, s.n_offset, ld, {w, s.w_dtype}, s.N,
                   {}, dinp, 0, s.K, accumulate);
      },
      [&]() -> std::optional<Dispatch> {
        // dinp(m,k) = sum_n dout[m,n] W[n,k]: Y = W, vec4 along k.
        if (!div4(s.K)) return {};
        return outer(quirks.matmul_tiling, s.M, s.K, s.N, {dout, s.n_offset, ld, 1}, {w, s.w_dtype},
                     s.K, {}, dinp, 0, s.K, accumulate);
      });
}

std::optional<Dispatch> matmul_backward_weight_texels(const DeviceQuirks& quirks,
                                                      const MatmulShape& s, BufferSlice dout,
                                                      BufferSlice inp, BufferSlice dw,
                                                      uint32_t accumulate) {
  const uint32_t ld = s.row_stride();
  return by_layout(
      quirks, s, "matmul_backward_weight",
      [&]() -> std::optional<Dispatch> {
        // dW(k,n) = sum_m inp[m,k] dout[m,n]: X = inp read along k, Y = dout, vec4 along n.
        if (!div4(s.N) || ld != s.N || s.n_offset != 0) return {};
        return outer(quirks.matmul_tiling, s.K, s.N, s.M, {inp, 0, 1, s.K, s.x_dtype}, {dout}, s.N,
                     {}, dw, 0, s.N, accumulate);
      },
      [&]() -> std::optional<Dispatch> {
        // dW(n,k) = sum_m dout[m,n] inp[m,k]: X = dout read along n, Y = inp, vec4 along k.
        if (!div4(s.K)) return {};
        return outer(quirks.matmul_tiling, s.N, s.K, s.M, {dout, s.n_offset, 1, ld},
                     {inp, s.x_dtype}, s.K, {}, dw, 0, s.K, accumulate);
      });
}

std::optional<Dispatch> matmul_backward_weight_bias_texels(const DeviceQuirks& quirks,
                                                           const MatmulShape& s, BufferSlice dout,
                                                           BufferSlice inp, BufferSlice dw,
                                                           uint32_t accumulate, BufferSlice dbias,
                                                           uint32_t bias_accumulate) {
  // in_out only: there Y is dout and dbias its column sums; out_in's X is dout (row sums).
  if (s.layout != WeightLayout::in_out || dbias.buffer == VK_NULL_HANDLE || accumulate > 1 ||
      bias_accumulate > 1)
    return {};
  return by_layout(
      quirks, s, "matmul_backward_weight",
      [&]() -> std::optional<Dispatch> {
        if (!div4(s.N) || s.row_stride() != s.N || s.n_offset != 0) return {};
        return outer(quirks.matmul_tiling, s.K, s.N, s.M, {inp, 0, 1, s.K, s.x_dtype}, {dout}, s.N,
                     dbias, dw, 0, s.N, accumulate, DType::f32,
                     bias_accumulate ? kAddColumnSums : kWriteColumnSums);
      },
      [&]() -> std::optional<Dispatch> { return {}; });
}

std::optional<TexelMatmulUse> texel_matmul_use(const Dispatch& d) {
  const bool outer_kernel = d.kernel == KernelId::matmul_outer_texels;
  if (!outer_kernel && d.kernel != KernelId::matmul_dot_texels) return std::nullopt;
  push::MatmulTexelsParams p{};
  if (d.push.size() != sizeof p || (outer_kernel && d.spec.size() < 6))
    throw std::logic_error(d.label + ": not a dispatch built by matmul_texels");
  std::memcpy(&p, d.push.data(), sizeof p);
  const TexelMatmul kernel = outer_kernel ? TexelMatmul::outer : TexelMatmul::dot;
  return TexelMatmulUse{matmul_class(kernel, outer_kernel ? d.spec[5] : 0, p.I, p.J, p.R), p.I, p.J,
                        p.R};
}

MatmulProbe matmul_probe(const MatmulClass& cls, uint32_t I, uint32_t J, uint32_t R) {
  auto up4 = [](uint32_t v) { return std::max<uint32_t>(4, (v + 3) / 4 * 4); };
  auto odd = [](uint32_t v) { return std::max<uint32_t>(5, v | 1); };
  MatmulProbe p{cls, I, up4(J), R};
  const auto mode = static_cast<XMode>(cls.kernel == TexelMatmul::outer ? cls.x_mode : 0);
  if (cls.kernel == TexelMatmul::dot || mode == XMode::vec4_along_r) {
    p.R = up4(R);
  } else if (mode == XMode::vec4_along_i) {
    p.I = up4(I);
  } else if (mode == XMode::scalar) {  // a binding of no whole number of texels
    p.I = odd(I), p.R = odd(R);
  } else if (mode == XMode::shifted_vec4_along_r) {  // rows an odd number of floats apart
    p.I = up4(I), p.R = odd(R);
  } else {  // shifted along i: columns an odd number of floats apart
    p.I = odd(I), p.R = up4(R);
  }
  p.x_floats = uint64_t(p.I) * p.R;
  p.y_floats = uint64_t(p.J) * p.R;
  p.c_floats = uint64_t(p.I) * p.J;
  return p;
}

Dispatch matmul_probe_dispatch(const MatmulProbe& p, const MatmulTile& t, uint32_t shared_x_lanes,
                               BufferSlice x, BufferSlice y, BufferSlice c) {
  const MatmulTiling only{t, t, {}, shared_x_lanes};
  if (p.cls.kernel == TexelMatmul::dot)
    return dot(only, p.I, p.J, p.R, {x}, 0, p.R, {y}, p.R, {}, c, 0, p.J, 0);
  // X as the mode reads it: r-contiguous rows R floats apart, or i-contiguous columns.
  const bool along_r = p.cls.x_mode == 0 || p.cls.x_mode == 2 || p.cls.x_mode == 3;
  const XOperand xo = along_r ? XOperand{x, 0, p.R, 1} : XOperand{x, 0, 1, p.I};
  Dispatch d = outer(only, p.I, p.J, p.R, xo, {y}, p.J, {}, c, 0, p.J, 0);
  if (d.spec.at(5) != p.cls.x_mode)
    throw std::logic_error("matmul_probe: the probe's strides select X_MODE " +
                           std::to_string(d.spec[5]) + ", not " + std::to_string(p.cls.x_mode));
  return d;
}

}  // namespace remat::kernels

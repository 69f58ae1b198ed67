#include "runtime/kernels/matmul_texels.h"

#include "matmul_texels_params.h"
#include "runtime/kernels/kernel_variants.h"

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

// Tiles measured on llvmpipe (Mesa 22.3, 2 cores) at GPT-2-small shapes: 8 rows x 8 columns per
// invocation keeps the accumulators near the register file while amortising each fetch over 32
// or more FMAs; larger tiles spill.
constexpr uint32_t kOuterRows = 16, kOuterCols4 = 2, kOuterWx = 8;
constexpr uint32_t kDotRows = 16, kDotCols = 8, kDotWx = 32;

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

// Y's bytes and storage type: a weight may be stored in 16 bits (kernel_variants.h).
struct YOperand {
  BufferSlice slice;
  DType dtype = DType::f32;
};

// C(I,J) (+)= X(I,R) · Y[R,J] with Y and C vec4 along j (the caller checks J, Y's and C's strides).
Dispatch outer(uint32_t I, uint32_t J, uint32_t R, const XOperand& x, YOperand y, uint32_t y_stride,
               BufferSlice bias, BufferSlice c, uint32_t c_offset, uint32_t ldc,
               uint32_t accumulate, DType c_dtype = DType::f32) {
  const XMode mode = x_mode(x, I, R);
  const bool has_bias = bias.buffer != VK_NULL_HANDLE;
  Dispatch d;
  d.kernel = kernel_variant(KernelId::matmul_outer_texels, {x.dtype, y.dtype, c_dtype});
  d.spec = {kOuterWx, 1, 1, kOuterRows, kOuterCols4, static_cast<uint32_t>(mode)};
  d.bindings = {texels(x.slice, mode != XMode::scalar, x.dtype),
                texels(y.slice, true, y.dtype),
                {has_bias ? bias : c, false},
                {c, true}};
  d.push = push_bytes(push::MatmulTexelsParams{I, J, R, x.offset, x.si, x.sr, y_stride, c_offset,
                                               ldc, accumulate, has_bias ? 1u : 0u});
  d.groups = {div_up(J / 4, kOuterWx * kOuterCols4), div_up(I, kOuterRows), 1};
  return d;
}

// C(I,J) (+)= X[I,R] · Y[J,R]^T, both vec4 along r (the caller checks R and the strides).
Dispatch dot(uint32_t I, uint32_t J, uint32_t R, YOperand x, uint32_t x_offset, uint32_t x_si,
             YOperand y, uint32_t y_stride, BufferSlice bias, BufferSlice c, uint32_t c_offset,
             uint32_t ldc, uint32_t accumulate, DType c_dtype = DType::f32) {
  const bool has_bias = bias.buffer != VK_NULL_HANDLE;
  Dispatch d;
  d.kernel = kernel_variant(KernelId::matmul_dot_texels, {x.dtype, y.dtype, c_dtype});
  d.spec = {kDotWx, 1, 1, kDotRows, kDotCols};
  d.bindings = {texels(x.slice, true, x.dtype),
                texels(y.slice, true, y.dtype),
                {has_bias ? bias : c, false},
                {c, true}};
  d.push = push_bytes(push::MatmulTexelsParams{I, J, R, x_offset, x_si, 1, y_stride, c_offset, ldc,
                                               accumulate, has_bias ? 1u : 0u});
  d.groups = {div_up(J, kDotWx * kDotCols), div_up(I, kDotRows), 1};
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
                                              BufferSlice out) {
  const uint32_t ld = s.row_stride();
  return by_layout(
      quirks, s, "matmul_forward",
      [&]() -> std::optional<Dispatch> {
        // out(m,n) = sum_k inp[m,k] W[k,n]: Y = W, vec4 along n.
        if (!div4(s.N) || !div4(ld) || !div4(s.n_offset)) return {};
        return outer(s.M, s.N, s.K, {inp, 0, s.K, 1, s.x_dtype}, {w, s.w_dtype}, s.N, bias, out,
                     s.n_offset, ld, 0, s.y_dtype);
      },
      [&]() -> std::optional<Dispatch> {
        // out(m,n) = sum_k inp[m,k] W[n,k]: both contiguous in k.
        if (!div4(s.K)) return {};
        return dot(s.M, s.N, s.K, {inp, s.x_dtype}, 0, s.K, {w, s.w_dtype}, s.K, bias, out,
                   s.n_offset, ld, 0, s.y_dtype);
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
        return dot(s.M, s.K, s.N, {dout}, s.n_offset, ld, {w, s.w_dtype}, s.N, {}, dinp, 0, s.K,
                   accumulate);
      },
      [&]() -> std::optional<Dispatch> {
        // dinp(m,k) = sum_n dout[m,n] W[n,k]: Y = W, vec4 along k.
        if (!div4(s.K)) return {};
        return outer(s.M, s.K, s.N, {dout, s.n_offset, ld, 1}, {w, s.w_dtype}, s.K, {}, dinp, 0,
                     s.K, accumulate);
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
        return outer(s.K, s.N, s.M, {inp, 0, 1, s.K, s.x_dtype}, {dout}, s.N, {}, dw, 0, s.N,
                     accumulate);
      },
      [&]() -> std::optional<Dispatch> {
        // dW(n,k) = sum_m dout[m,n] inp[m,k]: X = dout read along n, Y = inp, vec4 along k.
        if (!div4(s.K)) return {};
        return outer(s.N, s.K, s.M, {dout, s.n_offset, 1, ld}, {inp, s.x_dtype}, s.K, {}, dw, 0,
                     s.K, accumulate);
      });
}

}  // namespace remat::kernels

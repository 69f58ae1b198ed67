#include "runtime/kernels/rope.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "rope_params.h"

namespace remat::kernels {

namespace {
constexpr uint32_t kGroup = 256;

void check_shape(const RopeShape& s) {
  if (s.D == 0 || s.D % 2 != 0)
    throw std::invalid_argument("rope: head size " + std::to_string(s.D) +
                                " must be even and positive");
  if (s.R % 2 != 0 || s.R > s.D)
    throw std::invalid_argument("rope: rotary dims " + std::to_string(s.R) +
                                " must be even and at most the head size " + std::to_string(s.D));
  if (!(s.theta > 0.0f) || !std::isfinite(s.theta))
    throw std::invalid_argument("rope: theta must be positive and finite");
  const uint64_t pairs = uint64_t(s.B) * s.T * s.H * (s.D / 2);
  if (pairs > UINT32_MAX) throw std::invalid_argument("rope: B*T*H*D/2 exceeds 2^32");
}

// The layout with stride 0 resolved, checked to hold H heads per row and to index in 32 bits.
RopeLayout resolve(const RopeShape& s, RopeLayout l, const char* which) {
  const uint64_t heads = uint64_t(s.H) * s.D;
  if (l.stride == 0) l.stride = static_cast<uint32_t>(heads);
  if (uint64_t(l.offset) + heads > l.stride)
    throw std::invalid_argument(std::string("rope: ") + which + " heads (offset " +
                                std::to_string(l.offset) + " + " + std::to_string(heads) +
                                " floats) overrun its row stride " + std::to_string(l.stride));
  if (uint64_t(s.B) * s.T * l.stride > UINT32_MAX)
    throw std::invalid_argument(std::string("rope: ") + which + " exceeds 2^32 floats");
  return l;
}

// In place: the same slice, read and written through the same layout.
bool same_elements(BufferSlice a, RopeLayout la, BufferSlice b, RopeLayout lb) {
  return a.buffer == b.buffer && a.offset == b.offset && a.size == b.size &&
         la.stride == lb.stride && la.offset == lb.offset;
}

Dispatch rope(KernelId kernel, const RopeShape& s, BufferSlice in, RopeLayout in_layout,
              BufferSlice out, RopeLayout out_layout, GradWrite mode, BufferSlice positions) {
  check_shape(s);
  const uint32_t R = s.R == 0 ? s.D : s.R;
  in_layout = resolve(s, in_layout, "input");
  out_layout = resolve(s, out_layout, "output");
  // Overwriting in place, the pass-through elements already hold what they would be copied.
  const bool copy_rest =
      mode == GradWrite::accumulate || !same_elements(in, in_layout, out, out_layout);
  Dispatch d;
  d.kernel = kernel;
  d.spec = {kGroup};
  const bool packed = positions.buffer != VK_NULL_HANDLE;
  if (packed && positions.size < uint64_t(s.B) * s.T * sizeof(uint32_t))
    throw std::invalid_argument("rope: positions hold fewer than B*T ids");
  // Plain rows: the input stands in for the positions, never read.
  d.bindings = {{in, false}, {out, true}, {packed ? positions : in, false}};
  const RopeScaleTerms scale = rope_scale_terms(s.llama3);
  d.push = push_bytes(push::RopeParams{
      s.B, s.T, s.H, s.D, R, copy_rest ? 1u : 0u, in_layout.stride, in_layout.offset,
      out_layout.stride, out_layout.offset, rope_inv_d(R), rope_log2_theta(s.theta),
      static_cast<uint32_t>(mode), scale.slope, scale.offset, scale.inv_factor, packed ? 1u : 0u});
  const uint32_t items = copy_rest ? s.D / 2 : R / 2;  // per head, rope_body.glsl
  d.groups = {grid_stride_groups(uint64_t(s.B) * s.T * s.H * items, kGroup), 1, 1};
  return d;
}
}  // namespace

// In double, rounded to float once: the kernels and the reference start from these.
float rope_inv_d(uint32_t R) {
  return static_cast<float>(1.0 / double(R));
}
float rope_log2_theta(float theta) {
  return static_cast<float>(std::log2(double(theta)));
}

Dispatch rope_forward(const RopeShape& s, BufferSlice in, RopeLayout in_layout, BufferSlice out,
                      RopeLayout out_layout, DType act, BufferSlice positions) {
  Dispatch d = rope(act_variant(act, {KernelId::rope_forward, KernelId::rope_forward_f16,
                                      KernelId::rope_forward_bf16}),
                    s, in, in_layout, out, out_layout, GradWrite::overwrite, positions);
  d.label = "rope_forward";
  return d;
}

Dispatch rope_backward(const RopeShape& s, BufferSlice d_out, RopeLayout d_out_layout,
                       BufferSlice d_in, RopeLayout d_in_layout, GradWrite mode,
                       BufferSlice positions) {
  Dispatch d =
      rope(KernelId::rope_backward, s, d_out, d_out_layout, d_in, d_in_layout, mode, positions);
  d.label = "rope_backward";
  return d;
}

}  // namespace remat::kernels

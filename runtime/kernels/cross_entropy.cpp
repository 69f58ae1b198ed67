#include "runtime/kernels/cross_entropy.h"

#include <algorithm>

#include "cross_entropy_params.h"
#include "runtime/kernels/vec4_texels.h"

namespace remat::kernels {

namespace {

constexpr uint32_t kRowsPerGroup = 32;  // serial variant: rows (invocations) per workgroup
constexpr uint32_t kRowGroup = 256;     // workgroup variant: invocations per row (shader max 256)

uint64_t logits_bytes(const CrossEntropyShape& s) {
  return uint64_t(s.rows) * s.V * sizeof(float);
}

// The *_texels kernels read the logits through an R32F texel view (one float per texel: an odd
// vocabulary's rows start off vec4 boundaries) where the device prefers texel fetches.
bool logits_texels_apply(const DeviceQuirks& q, const CrossEntropyShape& s, BufferSlice logits) {
  return q.texel_fetch_beats_storage_loads && logits_bytes(s) > 0 &&
         logits.offset % kTexelAlignment == 0 && logits.size >= logits_bytes(s);
}

// kernels[0] reads storage buffers, kernels[1] a texel view of the logits (fp32 logits only:
// 16-bit ones are read through storage buffers).
Dispatch make(const KernelId (&kernels)[2], DType act, const DeviceQuirks& q,
              const CrossEntropyShape& s, BufferSlice logits, BufferSlice targets, BufferSlice out,
              uint32_t scale_word, uint32_t scale_stride) {
  const bool per_workgroup = !q.barriers_are_expensive;
  const bool texel = act == DType::f32 && logits_texels_apply(q, s, logits);
  const Binding in =
      texel ? float_input({logits.buffer, logits.offset, logits_bytes(s)}) : Binding{logits, false};
  Dispatch d;
  d.kernel = kernels[texel ? 1 : 0];
  d.spec = {per_workgroup ? kRowGroup : kRowsPerGroup, 1, 1, per_workgroup ? 1u : 0u};
  d.bindings = {in, {targets, false}, {out, true}};
  d.push = push_bytes(push::CrossEntropyParams{s.rows, s.V, scale_word, scale_stride});
  // A 2-D grid keeps each axis within the 65535 groups every device supports.
  const uint32_t groups = per_workgroup ? s.rows : div_up(s.rows, kRowsPerGroup);
  const uint32_t gx = std::clamp(groups, 1u, 65535u);
  d.groups = {gx, div_up(groups, gx), 1};
  return d;
}

}  // namespace

Dispatch cross_entropy_forward(const DeviceQuirks& quirks, const CrossEntropyShape& s,
                               BufferSlice logits, BufferSlice targets, BufferSlice losses,
                               DType act) {
  const KernelId storage =
      act_variant(act, {KernelId::cross_entropy_forward, KernelId::cross_entropy_forward_f16,
                        KernelId::cross_entropy_forward_bf16});
  Dispatch d = make({storage, KernelId::cross_entropy_forward_texels}, act, quirks, s, logits,
                    targets, losses, 0, 0);
  d.label = "cross_entropy_forward";
  return d;
}

Dispatch cross_entropy_backward(const DeviceQuirks& quirks, const CrossEntropyShape& s,
                                BufferSlice logits, BufferSlice targets, BufferSlice dlogits,
                                const LossScale& scale, DType act) {
  const KernelId storage =
      act_variant(act, {KernelId::cross_entropy_backward, KernelId::cross_entropy_backward_f16,
                        KernelId::cross_entropy_backward_bf16});
  Dispatch d = make({storage, KernelId::cross_entropy_backward_texels}, act, quirks, s, logits,
                    targets, dlogits, scale.word, scale.per_row ? 1u : 0u);
  d.bindings.push_back({scale.buffer, false});
  // The texel variant stores whole vec4s of dlogits through a second binding of the same slice.
  if (d.kernel == KernelId::cross_entropy_backward_texels) d.bindings.push_back({dlogits, true});
  d.label = "cross_entropy_backward";
  return d;
}

}  // namespace remat::kernels

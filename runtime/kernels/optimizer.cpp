#include "runtime/kernels/optimizer.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "runtime/kernels/vec4_texels.h"

namespace remat::kernels {

namespace {
constexpr uint32_t kGroup = 256;
// AdamW loops over its tensor with a grid stride beyond this many workgroups, which keeps the
// group count within every device's maxComputeWorkGroupCount[0] (at least 65535).
constexpr uint32_t kMaxGroups = 4096;
constexpr uint32_t kSlotGroup = 64;

}  // namespace

push::AdamWHyper adamw_hyper(const AdamWConfig& c, uint32_t step) {
  if (step == 0) throw std::invalid_argument("adamw_hyper: steps count from 1");
  push::AdamWHyper h{};
  h.lr = static_cast<float>(c.lr);
  h.beta1 = static_cast<float>(c.beta1);
  h.beta2 = static_cast<float>(c.beta2);
  h.one_minus_beta1 = static_cast<float>(1.0 - c.beta1);
  h.one_minus_beta2 = static_cast<float>(1.0 - c.beta2);
  h.eps = static_cast<float>(c.eps);
  h.weight_decay = static_cast<float>(c.weight_decay);
  h.bias_correction1 = static_cast<float>(1.0 - std::pow(c.beta1, double(step)));
  h.bias_correction2 = static_cast<float>(1.0 - std::pow(c.beta2, double(step)));
  h.step = step;
  return h;
}

Dispatch adamw(const DeviceQuirks& quirks, BufferSlice param, BufferSlice grad, BufferSlice m,
               BufferSlice v, BufferSlice hyper, BufferSlice clip, uint32_t count,
               bool weight_decay) {
  const bool clipped = clip.buffer != VK_NULL_HANDLE;
  const bool texel = vec4_texels_apply(quirks, {param, grad, m, v}, count);
  Dispatch d;
  d.kernel = texel ? KernelId::adamw_texels : KernelId::adamw;
  d.spec = {kGroup};
  // Without clipping the kernel never reads binding 5; bind the hyper buffer there.
  d.bindings = {{param, true},  texel ? vec4_texels(grad, count) : Binding{grad, false},
                {m, true},      {v, true},
                {hyper, false}, {clipped ? clip : hyper, false}};
  // The texel variant reads the old param, m and v through views of the slices it writes.
  if (texel)
    d.bindings.insert(d.bindings.end(),
                      {vec4_texels(param, count), vec4_texels(m, count), vec4_texels(v, count)});
  d.push = push_bytes(push::AdamWParams{count, weight_decay ? 1u : 0u, clipped ? 1u : 0u});
  // One invocation per float, or per vec4 for the texel variant.
  d.groups = {std::clamp(div_up(texel ? count / 4 : count, kGroup), 1u, kMaxGroups), 1, 1};
  d.label = "adamw";
  return d;
}

std::vector<Dispatch> adamw_pieces(const DeviceQuirks& quirks, BufferSlice param, BufferSlice grad,
                                   BufferSlice m, BufferSlice v, BufferSlice hyper,
                                   BufferSlice clip, uint32_t count, bool weight_decay) {
  const auto pieces = element_pieces(quirks, count, "adamw");
  if (pieces.size() == 1)
    return {adamw(quirks, param, grad, m, v, hyper, clip, count, weight_decay)};
  std::vector<Dispatch> ds;
  for (const Piece& p : pieces) {
    auto part = [&p](BufferSlice whole) { return piece_of(whole, p, sizeof(float)); };
    ds.push_back(adamw(quirks, part(param), part(grad), part(m), part(v), hyper, clip, p.count,
                       weight_decay));
  }
  return ds;
}

std::vector<GradNormEntry> grad_norm_entries(const DeviceQuirks& quirks,
                                             std::span<const uint64_t> counts) {
  std::vector<GradNormEntry> entries;
  for (std::size_t i = 0; i < counts.size(); ++i)
    for (const Piece& p : element_pieces(quirks, counts[i], "grad_norm")) entries.push_back({i, p});
  return entries;
}

namespace {
std::vector<uint64_t> entry_counts(const std::vector<GradNormEntry>& entries) {
  std::vector<uint64_t> counts;
  for (const auto& e : entries) counts.push_back(e.piece.count);
  return counts;
}
}  // namespace

uint32_t grad_norm_partials_floats(const DeviceQuirks& quirks, std::span<const uint64_t> counts) {
  return grad_norm_partial_floats(counts, quirks.max_binding_bytes);
}

std::vector<Dispatch> grad_norm(const DeviceQuirks& quirks, std::span<const BufferSlice> grads,
                                std::span<const uint64_t> counts, BufferSlice partials,
                                float max_norm, BufferSlice result) {
  const auto entries = grad_norm_entries(quirks, counts);
  const auto layout = grad_norm_layout(entry_counts(entries));
  std::vector<Dispatch> ds;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Piece& p = entries[i].piece;
    const BufferSlice range{partials.buffer, partials.offset + layout.offsets[i],
                            uint64_t(layout.slots[i]) * sizeof(float)};
    ds.push_back(grad_norm_partial(quirks, piece_of(grads[entries[i].tensor], p, sizeof(float)),
                                   p.count, range));
  }
  BufferSlice all = partials;
  all.size = uint64_t(layout.total) * sizeof(float);
  ds.push_back(grad_norm_finalize(quirks, all, layout.total, max_norm, result));
  return ds;
}

GradNormLayout grad_norm_layout(std::span<const uint64_t> counts) {
  GradNormLayout l;
  uint64_t total = 0;
  for (uint64_t c : counts) {
    const uint32_t s = grad_norm_slots(c);
    l.offsets.push_back(total * sizeof(float));
    l.slots.push_back(s);
    total += s;
  }
  l.total = static_cast<uint32_t>(total);
  return l;
}

Dispatch grad_norm_partial(const DeviceQuirks& quirks, BufferSlice grad, uint32_t count,
                           BufferSlice partials) {
  const uint32_t slots = grad_norm_slots(count);
  if (partials.size < uint64_t(slots) * sizeof(float))
    throw std::invalid_argument("grad_norm_partial: a tensor of " + std::to_string(count) +
                                " floats needs " + std::to_string(slots) +
                                " partial sums, the partials range holds " +
                                std::to_string(partials.size / sizeof(float)));
  Dispatch d;
  // The texel variant reads four floats per fetch, one for each of four slots.
  const bool texel = vec4_texels_apply(quirks, {grad}, count);
  d.kernel = texel ? KernelId::grad_norm_partial_texels : KernelId::grad_norm_partial;
  d.spec = {kSlotGroup};
  d.bindings = {texel ? vec4_texels(grad, count) : Binding{grad, false}, {partials, true}};
  d.push = push_bytes(push::GradNormPartialParams{count, slots});
  d.groups = {texel ? div_up(slots / 4, kSlotGroup) : slots / kSlotGroup, 1, 1};
  d.label = "grad_norm_partial";
  return d;
}

Dispatch grad_norm_finalize(const DeviceQuirks& quirks, BufferSlice partials, uint32_t count,
                            float max_norm, BufferSlice result) {
  (void)quirks;
  Dispatch d;
  d.kernel = KernelId::grad_norm_finalize;
  d.spec = {1};
  d.bindings = {{partials, false}, {result, true}};
  d.push = push_bytes(push::GradNormFinalizeParams{count, max_norm});
  d.groups = {1, 1, 1};
  d.label = "grad_norm_finalize";
  return d;
}

}  // namespace remat::kernels

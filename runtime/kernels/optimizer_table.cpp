#include "runtime/kernels/optimizer_table.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "runtime/kernels/binding_pieces.h"
#include "runtime/kernels/optimizer.h"
#include "runtime/kernels/vec4_texels.h"

namespace remat::kernels {

namespace {
constexpr uint32_t kAdamWGroup = 256;  // as optimizer.cpp's adamw
constexpr uint32_t kMaxPieceGroups = 4096;
// Each AdamW invocation first finds its piece in the table, which on llvmpipe cost as much as
// updating one vec4 (measured at tiny's shapes: the fused dispatch took 11-12 ms against 8 ms for
// one dispatch per tensor with one vec4 per invocation); a grid stride over this many items per
// invocation pays the lookup once per several.
constexpr uint32_t kItemsPerInvocation = 8;
constexpr uint32_t kSlotGroup = 64;  // as optimizer.cpp's grad_norm_partial
constexpr uint32_t kMaxGroupsX = 65535;

// One piece before it is placed in a window: its four slices.
struct Slices {
  BufferSlice param, grad, m, v;
  uint32_t count = 0;
  bool decay = false;
  uint32_t partials = 0;  // its first float in the whole partials buffer
  uint32_t slots = 0;
};

// The most bytes one window of an operand may span: one binding, and, where the texel kernels
// may read it, one texel view (device_plan.cpp guarantees 2^24 texels for the quirk).
uint64_t window_limit(const DeviceQuirks& q) {
  uint64_t limit = q.max_binding_bytes > 0 ? q.max_binding_bytes : (uint64_t(1) << 32) - 16;
  if (q.texel_fetch_beats_storage_loads) limit = std::min(limit, (uint64_t(1) << 24) * 16);
  return limit;
}

// Whether `s` still fits the window of one operand that starts at `base`.
bool fits(BufferSlice base, BufferSlice s, uint64_t limit) {
  return s.buffer == base.buffer && s.offset >= base.offset &&
         s.offset + s.size - base.offset <= limit;
}

BufferSlice span(BufferSlice first, BufferSlice last) {
  return {first.buffer, first.offset, last.offset + last.size - first.offset};
}

uint32_t floats_from(BufferSlice base, BufferSlice s) {
  return static_cast<uint32_t>((s.offset - base.offset) / sizeof(float));
}

std::vector<Slices> cut(const DeviceQuirks& quirks, std::span<const OptimizerTensor> tensors) {
  std::vector<Slices> out;
  uint64_t partials = 0;
  for (const OptimizerTensor& t : tensors)
    for (const Piece& p : element_pieces(quirks, t.count, "adamw")) {
      auto part = [&p](BufferSlice whole) { return piece_of(whole, p, sizeof(float)); };
      const uint32_t slots = grad_norm_slots(p.count);
      out.push_back({part(t.param), part(t.grad), part(t.m), part(t.v), uint32_t(p.count),
                     t.weight_decay, uint32_t(partials), slots});
      partials += slots;
    }
  return out;
}

// Fills the window's entries and group counts once its pieces are known.
void place(const std::vector<Slices>& s, OptimizerWindow& w, const DeviceQuirks& quirks,
           std::vector<push::OptimizerPiece>& table) {
  const Slices& a = s[w.first];
  const Slices& z = s[w.first + w.pieces - 1];
  w.param = span(a.param, z.param);
  w.grad = span(a.grad, z.grad);
  w.m = span(a.m, z.m);
  w.v = span(a.v, z.v);
  w.adamw_texels = w.norm_texels = true;
  for (uint32_t i = w.first; i < w.first + w.pieces; ++i) {
    w.adamw_texels = w.adamw_texels &&
                     vec4_texels_apply(quirks, {s[i].param, s[i].grad, s[i].m, s[i].v}, s[i].count);
    w.norm_texels = w.norm_texels && vec4_texels_apply(quirks, {s[i].grad}, s[i].count);
  }
  for (uint32_t i = w.first; i < w.first + w.pieces; ++i) {
    push::OptimizerPiece e{};
    e.param = floats_from(w.param, s[i].param);
    e.grad = floats_from(w.grad, s[i].grad);
    e.m = floats_from(w.m, s[i].m);
    e.v = floats_from(w.v, s[i].v);
    e.count = s[i].count;
    e.decay = s[i].decay ? 1u : 0u;
    e.slots = s[i].slots;
    e.partials = s[i].partials - a.partials;
    e.adamw_group = w.adamw_groups;
    const uint32_t items = w.adamw_texels ? e.count / 4 : e.count;
    e.adamw_groups = std::clamp(div_up(items, kAdamWGroup * kItemsPerInvocation), 1u,
                                kMaxPieceGroups);
    e.norm_group = w.norm_groups;
    e.norm_groups = w.norm_texels ? div_up(e.slots / 4, kSlotGroup) : e.slots / kSlotGroup;
    w.adamw_groups += e.adamw_groups;
    w.norm_groups += e.norm_groups;
    table.push_back(e);
  }
}

// The 2-D group count of `groups` flat workgroups (optimizer_table.glsl).
std::array<uint32_t, 3> grid(uint32_t groups) {
  return {std::min(groups, kMaxGroupsX), div_up(groups, kMaxGroupsX), 1};
}
}  // namespace

OptimizerTable optimizer_table(const DeviceQuirks& quirks, std::span<const OptimizerTensor> tensors,
                               BufferSlice partials) {
  const std::vector<Slices> s = cut(quirks, tensors);
  const uint64_t limit = window_limit(quirks);
  OptimizerTable t;
  for (uint32_t i = 0; i < s.size();) {
    OptimizerWindow w;
    w.first = i;
    const Slices& a = s[i];
    while (i < s.size() && fits(a.param, s[i].param, limit) && fits(a.grad, s[i].grad, limit) &&
           fits(a.m, s[i].m, limit) && fits(a.v, s[i].v, limit))
      ++i;
    if (i == w.first) throw std::logic_error("optimizer_table: a piece larger than one binding");
    w.pieces = i - w.first;
    place(s, w, quirks, t.pieces);
    const Slices& z = s[i - 1];
    w.partials = {partials.buffer, partials.offset + uint64_t(a.partials) * sizeof(float),
                  uint64_t(z.partials + z.slots - a.partials) * sizeof(float)};
    t.windows.push_back(w);
  }
  if (!s.empty()) t.partials_floats = s.back().partials + s.back().slots;
  return t;
}

std::vector<Dispatch> grad_norm_table(const DeviceQuirks& quirks, const OptimizerTable& t,
                                      BufferSlice table, BufferSlice partials, float max_norm,
                                      BufferSlice result) {
  std::vector<Dispatch> ds;
  for (const OptimizerWindow& w : t.windows) {
    Dispatch d;
    d.kernel = w.norm_texels ? KernelId::grad_norm_table_texels : KernelId::grad_norm_table;
    d.spec = {kSlotGroup};
    const uint64_t grad_floats = w.grad.size / sizeof(float);
    d.bindings = {w.norm_texels ? vec4_texels(w.grad, grad_floats) : Binding{w.grad, false},
                  {w.partials, true}};
    // Bindings 2-8 are the AdamW kernels'; the table is binding 9 in both.
    d.bindings.resize(9, Binding{table, false});
    d.bindings.push_back({table, false});
    d.push = push_bytes(push::OptimizerTableParams{w.first, w.pieces, w.norm_groups, 0});
    d.groups = grid(w.norm_groups);
    d.label = "grad_norm_table";
    ds.push_back(std::move(d));
  }
  BufferSlice all = partials;
  all.size = uint64_t(t.partials_floats) * sizeof(float);
  ds.push_back(grad_norm_finalize(quirks, all, t.partials_floats, max_norm, result));
  return ds;
}

std::vector<Dispatch> adamw_table(const OptimizerTable& t, BufferSlice table, BufferSlice hyper,
                                  BufferSlice clip) {
  const bool clipped = clip.buffer != VK_NULL_HANDLE;
  std::vector<Dispatch> ds;
  for (const OptimizerWindow& w : t.windows) {
    Dispatch d;
    d.kernel = w.adamw_texels ? KernelId::adamw_table_texels : KernelId::adamw_table;
    d.spec = {kAdamWGroup};
    const auto view = [&](BufferSlice s) { return vec4_texels(s, s.size / sizeof(float)); };
    d.bindings = {{w.param, true}, w.adamw_texels ? view(w.grad) : Binding{w.grad, false},
                  {w.m, true},     {w.v, true},
                  {hyper, false},  {clipped ? clip : hyper, false}};
    if (w.adamw_texels)
      d.bindings.insert(d.bindings.end(), {view(w.param), view(w.m), view(w.v)});
    else
      d.bindings.resize(9, Binding{table, false});
    d.bindings.push_back({table, false});
    d.push = push_bytes(
        push::OptimizerTableParams{w.first, w.pieces, w.adamw_groups, clipped ? 1u : 0u});
    d.groups = grid(w.adamw_groups);
    d.label = "adamw_table";
    ds.push_back(std::move(d));
  }
  return ds;
}

}  // namespace remat::kernels

// Dispatches for the optimizer step: the global gradient norm (for clipping) and AdamW.
//
// A step over P parameter tensors is P grad_norm_partial dispatches (each into its own range of
// one partials buffer, laid out by grad_norm_layout), one grad_norm_finalize, then P adamw
// dispatches that read the clip scale the finalize wrote; a tensor larger than one binding (the
// token embedding on lavapipe) takes one of each per piece. The AdamW hyperparameters live in a
// 44-byte buffer (push::AdamWHyper) the host rewrites before each submission. A session records
// these only with SessionConfig::fused_optimizer off: by default it runs the same updates and
// sums as one dispatch per binding window (runtime/kernels/optimizer_table.h).
#pragma once

#include <span>
#include <vector>

#include "graph/optimizer_config.h"
#include "optimizer_params.h"
#include "planner/session_extras.h"
#include "runtime/kernels/binding_pieces.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

// The one AdamW configuration is graph/optimizer_config.h's.
using remat::AdamWConfig;

// The contents of the hyper buffer for step `step` (counted from 1): 1 - beta and the bias
// corrections 1 - beta^t computed in double, as PyTorch does.
push::AdamWHyper adamw_hyper(const AdamWConfig& c, uint32_t step);

// In place over `count` floats: param, m and v updated from grad. `hyper` holds a
// push::AdamWHyper. `clip` holds the push::GradNormResult of grad_norm_finalize, or is {} for no
// clipping. `weight_decay` is set for 2-D tensors only (GPT-2 convention: not biases, not
// LayerNorm gains). Where quirks.texel_fetch_beats_storage_loads is set, count is a multiple of 4
// and param, grad, m and v start on 16-byte boundaries, this is adamw_texels.comp, which reads
// all four through RGBA32F texel views (2-3x faster on llvmpipe) and gives the same bits;
// otherwise adamw.comp.
Dispatch adamw(const DeviceQuirks& quirks, BufferSlice param, BufferSlice grad, BufferSlice m,
               BufferSlice v, BufferSlice hyper, BufferSlice clip, uint32_t count,
               bool weight_decay);

// adamw with param, grad, m and v bound in element pieces that each fit one binding (GPT-2's
// token embedding does not fit lavapipe's 128 MiB): one dispatch per piece, exactly adamw's one
// dispatch when they fit. Elementwise, so the pieces do not change any bit.
std::vector<Dispatch> adamw_pieces(const DeviceQuirks& quirks, BufferSlice param, BufferSlice grad,
                                   BufferSlice m, BufferSlice v, BufferSlice hyper,
                                   BufferSlice clip, uint32_t count, bool weight_decay);

// Partial sums per tensor (planner/session_extras.h: the planner sizes the partials buffer).
using remat::grad_norm_slots;

// Where each tensor's partial sums go in the partials buffer.
struct GradNormLayout {
  std::vector<uint64_t> offsets;  // byte offset of each tensor's range
  std::vector<uint32_t> slots;    // floats in each tensor's range
  uint32_t total = 0;             // floats in all ranges: the partials buffer size / 4
};
GradNormLayout grad_norm_layout(std::span<const uint64_t> counts);

// The gradient norm's entries: each tensor's element pieces that fit one binding (one piece,
// the whole tensor, when it fits), in order. Every entry is one grad_norm_partial dispatch with
// its own range of partial sums (its own grad_norm_layout count), so a split tensor's squares
// are grouped differently from the unsplit ones, but in a fixed order: run-to-run identical.
struct GradNormEntry {
  std::size_t tensor;  // index into the counts
  Piece piece;         // its elements
};
std::vector<GradNormEntry> grad_norm_entries(const DeviceQuirks& quirks,
                                             std::span<const uint64_t> counts);

// Floats of the partials buffer that grad_norm needs for tensors of these counts.
uint32_t grad_norm_partials_floats(const DeviceQuirks& quirks, std::span<const uint64_t> counts);

// The whole gradient norm: a grad_norm_partial per entry of grad_norm_entries, each into its
// grad_norm_layout range of `partials`, then grad_norm_finalize into `result`. grads[i] holds
// counts[i] floats.
std::vector<Dispatch> grad_norm(const DeviceQuirks& quirks, std::span<const BufferSlice> grads,
                                std::span<const uint64_t> counts, BufferSlice partials,
                                float max_norm, BufferSlice result);

// Sums of squares of `grad` (count floats) into `partials`, which must hold
// grad_norm_slots(count) floats. Where quirks.texel_fetch_beats_storage_loads is set, count is a
// multiple of 4 and grad starts on a 16-byte boundary, grad is read through an RGBA32F texel view
// (grad_norm_partial_texels.comp), with the same sums in the same order: the same bits.
Dispatch grad_norm_partial(const DeviceQuirks& quirks, BufferSlice grad, uint32_t count,
                           BufferSlice partials);

// Sums the first `count` floats of `partials` in order and writes a push::GradNormResult (norm,
// clip scale) to `result`. max_norm 0 disables clipping (scale 1).
Dispatch grad_norm_finalize(const DeviceQuirks& quirks, BufferSlice partials, uint32_t count,
                            float max_norm, BufferSlice result);

}  // namespace remat::kernels

// The session's fixed device allocations beside the persistent buffer and the arena, declared
// once: runtime/session allocates exactly these sizes and the memory budget
// (planner/memory_budget.h) counts exactly them, so a plan's whole-session total is what the
// device ledger measures.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "planner/plan.h"

namespace remat {

// Vulkan guarantees maxStorageBufferRange >= 2^27 bytes; a plan made without a device assumes
// this smallest limit, which gives the most gradient-norm pieces (an upper bound elsewhere).
constexpr uint64_t kSmallestBindingLimit = uint64_t(1) << 27;

struct SessionExtras {
  // Host-visible step io: tokens and targets in, losses and the gradient norm out, in this order.
  uint64_t io_staging = 0;
  uint64_t io_losses_offset = 0;     // where the losses go in io_staging
  uint64_t io_norm_offset = 0;       // where push::GradNormResult goes in io_staging
  uint64_t io_positions_offset = 0;  // packed rows: where the positions go (0: none)
  uint64_t adamw_hyper = 0;          // host-visible push::AdamWHyper, rewritten every step;
                                     // then, under Plan::row_loss_scales, one float per row
  uint64_t row_scales_offset = 0;    // where those floats begin in it (0: none)
  uint64_t grad_norm_partials = 0;   // the gradient norm's partial sums
  uint64_t optimizer_table = 0;      // push::OptimizerPiece per piece of a trained parameter

  // The allocations by name, in allocation order.
  std::vector<std::pair<std::string, uint64_t>> named() const;
  uint64_t total() const { return io_staging + adamw_hyper + grad_norm_partials + optimizer_table; }
};

// The extras of a session running `plan` on a device that binds at most max_binding_bytes per
// storage buffer (0: no limit). Each extra is bound whole, so each is one allocation:
// std::invalid_argument when one is larger than plan.page_bytes, or when the session's
// allocations (the pages of both buffers and the extras) outnumber
// plan.allocation.max_allocation_count.
SessionExtras session_extras(const Plan& plan, uint64_t max_binding_bytes);

// Device allocations a session running `plan` with `extras` makes for them.
uint64_t session_allocation_count(const Plan& plan, const SessionExtras& extras);

// Partial sums (floats) grad_norm_partial writes for a tensor of `count` elements: a multiple
// of 64, so consecutive ranges start 256-byte aligned (any device's
// minStorageBufferOffsetAlignment).
uint32_t grad_norm_slots(uint64_t count);

// Entries of the optimizer table (runtime/kernels/optimizer_table.h) for gradients of these
// element counts: one per binding piece of each.
uint32_t optimizer_table_pieces(std::span<const uint64_t> counts, uint64_t max_binding_bytes);

// Floats of the partials buffer for gradients of these element counts, each bound in
// binding_pieces at max_binding_bytes, each piece with its own grad_norm_slots range.
uint32_t grad_norm_partial_floats(std::span<const uint64_t> counts, uint64_t max_binding_bytes);

}  // namespace remat

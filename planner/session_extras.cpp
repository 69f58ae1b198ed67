#include "planner/session_extras.h"

#include <algorithm>
#include <stdexcept>

#include "planner/binding_pieces.h"
#include "shaders/optimizer_params.h"

namespace remat {

std::vector<std::pair<std::string, uint64_t>> SessionExtras::named() const {
  return {{"step io staging", io_staging},
          {"AdamW hyperparameters", adamw_hyper},
          {"grad-norm partials", grad_norm_partials},
          {"optimizer table", optimizer_table}};
}

namespace {

void check_allocations(const Plan& plan, const SessionExtras& x) {
  for (const auto& [name, bytes] : x.named())
    if (plan.page_bytes && bytes > plan.page_bytes)
      throw std::invalid_argument("the session's " + name + " (" + std::to_string(bytes) +
                                  " bytes) is larger than one device allocation of at most " +
                                  std::to_string(plan.page_bytes) +
                                  " bytes (maxMemoryAllocationSize); use a smaller model");
  const uint64_t count = session_allocation_count(plan, x);
  const uint32_t limit = plan.allocation.max_allocation_count;
  if (limit && count > limit)
    throw std::invalid_argument(
        "the session needs " + std::to_string(count) + " device allocations (persistent buffer " +
        std::to_string(plan.persistent_allocations.size()) + ", arena " +
        std::to_string(plan.arena_allocations.size()) + ", extras " +
        std::to_string(x.named().size()) + ") but the device allows " + std::to_string(limit) +
        " (maxMemoryAllocationCount); use a smaller model, --batch or --seq");
}

}  // namespace

uint64_t session_allocation_count(const Plan& plan, const SessionExtras& extras) {
  return plan.persistent_allocations.size() + plan.arena_allocations.size() + extras.named().size();
}

SessionExtras session_extras(const Plan& plan, uint64_t max_binding_bytes) {
  SessionExtras x;
  const uint64_t io_bytes = plan.tensors.at(size_t(plan.tokens)).bytes;
  x.io_losses_offset = 2 * io_bytes;
  x.io_norm_offset = x.io_losses_offset + plan.tensors.at(size_t(plan.losses)).bytes;
  x.io_staging = x.io_norm_offset + sizeof(push::GradNormResult);
  if (plan.positions != kNoTensor) {
    // After everything else, so that unpacked sessions keep their layout.
    x.io_positions_offset = (x.io_staging + 15) / 16 * 16;
    x.io_staging = x.io_positions_offset + plan.tensors.at(size_t(plan.positions)).bytes;
  }
  x.adamw_hyper = sizeof(push::AdamWHyper);
  if (plan.row_loss_scales) {
    x.row_scales_offset = (x.adamw_hyper + 15) / 16 * 16;
    x.adamw_hyper = x.row_scales_offset + plan.tensors.at(size_t(plan.losses)).bytes;
  }
  std::vector<uint64_t> counts;
  for (TensorId g : plan.parameter_grads)
    counts.push_back(plan.tensors.at(size_t(g)).tensor.elements());
  x.grad_norm_partials = uint64_t(grad_norm_partial_floats(counts, max_binding_bytes)) * 4;
  x.optimizer_table =
      uint64_t(optimizer_table_pieces(counts, max_binding_bytes)) * sizeof(push::OptimizerPiece);
  check_allocations(plan, x);
  return x;
}

uint32_t grad_norm_slots(uint64_t count) {
  // At least 2048 squares per slot before another 64 slots are added, at most 1024 slots: the
  // token embedding (38M floats) gets 1024 slots of ~37k squares, a bias 64 slots.
  constexpr uint64_t kSlotGroup = 64;
  const uint64_t groups = std::clamp<uint64_t>((count + 64 * 2048 - 1) / (64 * 2048), 1, 16);
  return static_cast<uint32_t>(groups * kSlotGroup);
}

uint32_t optimizer_table_pieces(std::span<const uint64_t> counts, uint64_t max_binding_bytes) {
  uint64_t n = 0;
  for (uint64_t c : counts)
    n += binding_pieces(max_binding_bytes, c, sizeof(float), "adamw").size();
  return static_cast<uint32_t>(n);
}

uint32_t grad_norm_partial_floats(std::span<const uint64_t> counts, uint64_t max_binding_bytes) {
  uint64_t total = 0;
  for (uint64_t c : counts)
    for (const Piece& p : binding_pieces(max_binding_bytes, c, sizeof(float), "grad_norm"))
      total += grad_norm_slots(p.count);
  return static_cast<uint32_t>(total);
}

}  // namespace remat

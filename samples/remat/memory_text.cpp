#include "memory_text.h"

#include "runtime/vulkan/device_plan.h"

namespace remat::cli {

MemoryRequest memory_request(const ModelSelection& sel, uint64_t alignment,
                             uint64_t max_binding_bytes, const AllocationLimits& allocation) {
  return {sel.memory.value_or(0),
          sel.policy,
          sel.arena,
          sel.choose_loss_chunk,
          alignment,
          max_binding_bytes,
          sel.costs ? &*sel.costs : nullptr,
          allocation};
}

std::string allocations_line(const Plan& plan, const SessionMemory& m) {
  const uint64_t count = session_allocation_count(plan, m.extras);
  std::string s =
      "allocations: persistent buffer " + std::to_string(plan.persistent_allocations.size()) +
      ", arena " + std::to_string(plan.arena_allocations.size()) + ", extras " +
      std::to_string(m.extras.named().size()) + " (" + std::to_string(count) + " in all";
  if (plan.page_bytes) s += ", each at most " + format_bytes(plan.page_bytes);
  if (plan.persistent_padding) s += "; " + format_bytes(plan.persistent_padding) + " of padding";
  return s + ")";
}

void allocations_json(JsonWriter& j, const Plan& plan, const SessionMemory& m) {
  j.begin_object().field("max_allocation_bytes", plan.allocation.max_allocation_bytes);
  j.field("max_allocation_count", uint64_t(plan.allocation.max_allocation_count));
  j.field("page_bytes", plan.page_bytes);
  j.field("persistent", uint64_t(plan.persistent_allocations.size()));
  j.field("arena", uint64_t(plan.arena_allocations.size()));
  j.field("extras", uint64_t(m.extras.named().size()));
  j.field("total", session_allocation_count(plan, m.extras));
  j.field("persistent_padding_bytes", plan.persistent_padding).end_object();
}

std::string budget_text(const ModelSelection& sel, int loss_chunk) {
  std::string parts;
  if (sel.arena) parts = "cap " + format_bytes(*sel.arena);
  if (sel.memory)
    parts += (parts.empty() ? "" : ", ") + std::string("memory cap ") + format_bytes(*sel.memory) +
             ", loss chunk " +
             (loss_chunk ? std::to_string(loss_chunk) + " rows" : std::string("0 (whole logits)"));
  else if (loss_chunk)
    parts += (parts.empty() ? "" : ", ") + std::string("loss chunk ") + std::to_string(loss_chunk) +
             " rows";
  return parts.empty() ? "" : " (" + parts + ")";
}

std::string session_memory_line(const SessionMemory& m, std::optional<uint64_t> budget) {
  std::string s = "session total " + format_bytes(m.total()) + " = " + m.describe();
  if (budget)
    s +=
        " (budget " + format_bytes(*budget) + ", " + format_bytes(*budget - m.total()) + " unused)";
  return s;
}

void session_memory_json(JsonWriter& j, const SessionMemory& m, std::optional<uint64_t> budget) {
  j.begin_object().field("total_bytes", m.total()).field("budget_bytes", budget);
  j.field("frozen_bytes", m.frozen_bytes).field("frozen_dtype", m.frozen_dtype);
  j.field("trainable_bytes", m.trainable_bytes).field("io_bytes", m.io_bytes);
  j.field("arena_bytes", m.arena_bytes).field("page_padding_bytes", m.page_padding);
  j.field("loss_chunk", m.loss_chunk).key("extras");
  j.begin_object();
  for (const auto& [name, bytes] : m.extras.named()) j.field(name, bytes);
  j.end_object().end_object();
}

}  // namespace remat::cli

#include "runtime/session_budget.h"

#include <stdexcept>
#include <string>

#include "planner/delta_chunk.h"
#include "planner/session_plan.h"
#include "runtime/kernels/gated_delta_rule_wy.h"
#include "runtime/vulkan/arena.h"
#include "runtime/vulkan/buffer.h"

namespace remat {

AllocationLimits deviceless_allocation_limits() {
  AllocationLimits limits{kDevicelessAllocationLimit, kSmallestAllocationCount};
  PhysicalDeviceSnapshot vulkan_minimum;
  vulkan_minimum.max_memory_allocation_size = limits.max_allocation_bytes;
  limits.max_allocation_bytes =
      clamp_max_memory_allocation_size(vulkan_minimum, max_allocation_from_env())
          .max_memory_allocation_size;
  return limits;
}

AllocationLimits session_allocation_limits(const Device& d, const SessionConfig& c) {
  const PhysicalDeviceSnapshot info =
      clamp_max_memory_allocation_size(d.info(), c.max_allocation_bytes);
  AllocationLimits limits;
  limits.max_allocation_bytes = info.max_memory_allocation_size;
  limits.max_allocation_count = info.max_memory_allocation_count;
  return limits;
}

namespace {

// A chunk is one chunkwise call forward and one backward (0: no limit).
uint32_t max_delta_steps(const DeviceQuirks& quirks, const ModelConfig& model) {
  if (!model.qwen35) return 0;
  return kernels::gated_delta_rule_wy_max_steps(
      quirks, static_cast<uint32_t>(model.qwen35_layers.linear_key_head_dim));
}

}  // namespace

Plan session_plan(const Device& d, SessionConfig& c, const DeviceQuirks& quirks) {
  const SessionPlanRequest request{c.policy,
                                   c.arena_budget,
                                   c.memory_budget,
                                   c.choose_loss_chunk,
                                   session_alignment(d),
                                   quirks.max_binding_bytes,
                                   c.costs,
                                   session_allocation_limits(d, c),
                                   max_delta_steps(quirks, c.model)};
  SessionPlan p = c.choose_delta_chunk
                      ? plan_session_choosing_delta_chunk(c.model, c.shape, c.lora, request)
                      : plan_session(c.model, c.shape, c.lora, request);
  c.shape = p.shape;
  return std::move(p.plan);
}

void check_allocation_sizes(Device& device, const Plan& plan, const SessionExtras& extras,
                            uint64_t budget) {
  uint64_t planned = 0, allocated = 0;
  const auto add = [&](uint64_t bytes) {
    planned += bytes;
    allocated += allocation_bytes(device, bytes);
  };
  for (const auto* buffer : {&plan.persistent_allocations, &plan.arena_allocations})
    for (uint64_t chunk : *buffer) add(chunk);
  for (const auto& [name, bytes] : extras.named()) add(bytes);
  if (allocated <= budget) return;
  throw std::invalid_argument(
      device.info().name + " rounds the session's allocations up by " +
      std::to_string(allocated - planned) + " bytes (vkGetBufferMemoryRequirements): the plan's " +
      std::to_string(planned) + " bytes take " + std::to_string(allocated) +
      " bytes of device memory, more than the memory budget of " + std::to_string(budget) +
      " bytes; raise the budget by at least " + std::to_string(allocated - budget) + " bytes");
}

}  // namespace remat

// A session's plan under its budgets, and the one thing a memory budget's planner cannot know:
// how much the driver rounds each allocation up, asked of the driver before anything is
// allocated, so a session that would exceed its budget is refused instead of allocating past it.
#pragma once

#include <cstdint>

#include "planner/plan.h"
#include "planner/session_extras.h"
#include "runtime/session.h"
#include "runtime/vulkan/device.h"

namespace remat {

// The allocation limits `remat plan` assumes without a device: lavapipe's maxMemoryAllocationSize
// (2 GiB, planner/allocation_pages.h says why) and Vulkan's guaranteed maxMemoryAllocationCount
// (4096), the size lowered by REMAT_MAX_ALLOCATION as on a device.
AllocationLimits deviceless_allocation_limits();

// The allocation limits the planner lays the session's buffers out under: the device's, with
// config.max_allocation_bytes applied (clamp_max_memory_allocation_size).
AllocationLimits session_allocation_limits(const Device& device, const SessionConfig& config);

// The plan for `config` on `device` (planner/session_plan.h at the device's alignment, binding
// limit and allocation limits); config.shape.loss_chunk becomes the chunk chosen when
// config.choose_loss_chunk.
Plan session_plan(const Device& device, SessionConfig& config, const DeviceQuirks& quirks);

// std::invalid_argument when the persistent buffer's and the arena's planned allocations and the
// extras of `plan` would
// take more than `budget` bytes once the driver's allocation sizes
// (vkGetBufferMemoryRequirements) are counted, naming the rounding and how much more to give.
void check_allocation_sizes(Device& device, const Plan& plan, const SessionExtras& extras,
                            uint64_t budget);

}  // namespace remat

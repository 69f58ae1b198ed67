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

// The plan for `config` on `device` (planner/session_plan.h at the device's alignment and binding
// limit); config.shape.loss_chunk becomes the chunk chosen when config.choose_loss_chunk.
Plan session_plan(const Device& device, SessionConfig& config, const DeviceQuirks& quirks);

// std::invalid_argument when the persistent buffer, the arena and the extras of `plan` would
// take more than `budget` bytes once the driver's allocation sizes
// (vkGetBufferMemoryRequirements) are counted, naming the rounding and how much more to give.
void check_allocation_sizes(Device& device, const Plan& plan, const SessionExtras& extras,
                            uint64_t budget);

}  // namespace remat

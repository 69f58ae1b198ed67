// Device profiles: the Vulkan limits and features of real GPUs, as published device reports give
// them, and the pure clamp that makes any device act within one (REMAT_DEVICE_PROFILE=NAME,
// `--device-profile NAME`). The clamp runs on the snapshot before plan_device, so everything
// downstream (kernel variants, binding pieces, the planner's limits) follows the profile.
// Nothing here calls Vulkan; docs/device-profiles.md lists the rows with their sources.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "runtime/vulkan/device_plan.h"

namespace remat {

// One device's published limits. A field left empty was not in the cited report: the clamp leaves
// it as the device has it (never a guessed value).
struct DeviceProfile {
  std::string_view name;    // what REMAT_DEVICE_PROFILE takes, e.g. "mali-g78"
  std::string_view device;  // the GPU and the machine it was reported from
  std::string_view driver;  // driver name and version of the report
  std::string_view source;  // where the values come from (a report's URL, a spec section)
  std::string_view notes;   // which fields the source lacks, and anything else to know

  std::optional<uint64_t> max_storage_buffer_range;
  std::optional<uint64_t> max_memory_allocation_size;
  std::optional<uint64_t> min_storage_buffer_offset_alignment;
  std::optional<uint64_t> max_texel_buffer_elements;
  std::optional<uint64_t> min_texel_buffer_offset_alignment;
  std::optional<uint32_t> max_shared_memory_bytes;
  std::optional<uint32_t> max_workgroup_invocations;
  std::optional<std::array<uint32_t, 3>> max_workgroup_size;
  std::optional<std::array<uint32_t, 3>> max_workgroup_count;
  std::optional<uint32_t> max_push_constants_bytes;
  std::optional<uint32_t> max_storage_buffers_per_stage;
  std::optional<bool> timestamps;

  std::optional<uint32_t> subgroup_size;
  std::optional<bool> subgroup_arithmetic;
  std::optional<bool> subgroup_ballot;
  std::optional<bool> subgroup_vote;
  std::optional<bool> subgroup_shuffle;
  std::optional<bool> subgroup_quad;

  std::optional<bool> storage_buffer_16bit;
  std::optional<bool> shader_float16;
  std::optional<bool> buffer_device_address;
  std::optional<bool> cooperative_matrix;
  std::optional<bool> push_descriptors;
  std::optional<bool> memory_budget;

  std::optional<uint64_t> device_local_bytes;  // all device-local heaps together
};

// Every profile, in the order `remat devices --profiles` lists them.
std::span<const DeviceProfile> device_profiles();
// nullptr when no profile has that name (exact, lower case).
const DeviceProfile* find_device_profile(std::string_view name);
// The profile named `name`; std::invalid_argument listing the known names otherwise.
const DeviceProfile& device_profile(std::string_view name);
// "adreno-540, intel-hd-520, ...": for help texts and errors.
std::string device_profile_names();

// `d` acting within `p`: every limit min(device, profile) (alignments max: larger is stricter),
// every feature the profile lacks off, device-local heaps cut to the profile's total. The
// subgroup size stays the device's, because kernels that choose by it must be right on the
// device that runs them; where the profile's size differs, every subgroup operation is off, so no
// kernel choice rests on a subgroup the profiled GPU would not have. `profile` is set to p.name
// and the name says it, so every message that names the device names the profile too.
PhysicalDeviceSnapshot apply_device_profile(PhysicalDeviceSnapshot d, const DeviceProfile& p);

// The Vulkan specification's required limits (Vulkan 1.3, "Limit Requirements" table, and
// maxMemoryAllocationSize >= 2^30 from VkPhysicalDeviceMaintenance3Properties): no conformant
// device reports less (alignments: more). Profiles are checked against it.
struct VulkanRequiredLimits {
  static constexpr uint64_t max_storage_buffer_range = uint64_t(1) << 27;
  static constexpr uint64_t max_memory_allocation_size = uint64_t(1) << 30;
  static constexpr uint64_t max_storage_buffer_offset_alignment = 256;  // at most this
  static constexpr uint64_t max_texel_buffer_elements = 65536;
  static constexpr uint64_t max_texel_buffer_offset_alignment = 256;  // at most this
  static constexpr uint32_t max_shared_memory_bytes = 16384;
  static constexpr uint32_t max_workgroup_invocations = 128;
  static constexpr std::array<uint32_t, 3> max_workgroup_size{128, 128, 64};
  static constexpr std::array<uint32_t, 3> max_workgroup_count{65535, 65535, 65535};
  static constexpr uint32_t max_push_constants_bytes = 128;
  static constexpr uint32_t max_storage_buffers_per_stage = 4;
  static constexpr uint32_t subgroup_size = 1;
};

// The first field of `p` below the spec's required limits (or an alignment above its maximum),
// as "maxStorageBufferRange 1000 < 134217728"; nullopt when every present field is at or above.
std::optional<std::string> below_required_limits(const DeviceProfile& p);

}  // namespace remat

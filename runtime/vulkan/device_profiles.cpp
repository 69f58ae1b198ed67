#include "runtime/vulkan/device_profiles.h"

#include <algorithm>
#include <stdexcept>

namespace remat {

namespace {

// The vulkan.gpuinfo.org exports Khronos keeps as test data for its validation layers or as the
// reports behind LunarG's desktop profiles (Vulkan-Profiles); each URL pins a commit with the file.
// Values are copied from those files as reported; a field an export lacks stays empty.
constexpr uint32_t kU32Max = 4294967295u;

const DeviceProfile kProfiles[] = {
    {
        .name = "mali-g78",
        .device = "Arm Mali-G78 (Google Pixel 6)",
        .driver = "Arm Mali r36p0 (v1.r36p0-01eac0, driver 36.0.0), Android 13, Vulkan 1.1.201",
        .source =
            "vulkan.gpuinfo.org export VP_GPUINFO_Google_Pixel_6_36_0_0_android_13_0: "
            "https://github.com/KhronosGroup/Vulkan-ValidationLayers/blob/"
            "dee08cec325d07d91c159caa0561adda91d34c51/tests/device_profiles/pixel_6_mali.json",
        .notes = "memory heaps not in the export (heaps unclamped)",
        .max_storage_buffer_range = 268435456,
        .max_memory_allocation_size = 7951626240,
        .min_storage_buffer_offset_alignment = 64,
        .max_texel_buffer_elements = 268435456,
        .min_texel_buffer_offset_alignment = 64,
        .max_shared_memory_bytes = 32768,
        .max_workgroup_invocations = 512,
        .max_workgroup_size = std::array<uint32_t, 3>{512, 512, 512},
        .max_workgroup_count = std::array<uint32_t, 3>{kU32Max, kU32Max, kU32Max},
        .max_push_constants_bytes = 256,
        .max_storage_buffers_per_stage = 500000,
        .timestamps = true,
        .subgroup_size = 16,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = true,
        .storage_buffer_16bit = true,
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = false,
        .push_descriptors = false,
        .memory_budget = false,
    },
    {
        .name = "adreno-v512",
        .device = "Qualcomm Adreno, model not named (the export labels the phone 'Google Pixel 6')",
        .driver = "Qualcomm Adreno Vulkan driver 512.502.0 (compiler EV031.32.02.10, 06/03/21), "
                  "Android 12, Vulkan 1.1.128",
        .source = "vulkan.gpuinfo.org export VP_GPUINFO_Google_Pixel_6_512_502_0_android_12_0: "
                  "https://github.com/KhronosGroup/Vulkan-ValidationLayers/blob/"
                  "e78a88596cf3e0361c1e453b40fef85ec55300dc/tests/device_profiles/"
                  "pixel_6_adreno.json",
        .notes = "memory heaps and storageBuffer16BitAccess not in the export (unclamped)",
        .max_storage_buffer_range = 536870912,
        .max_memory_allocation_size = 1073741824,
        .min_storage_buffer_offset_alignment = 64,
        .max_texel_buffer_elements = 134217728,
        .min_texel_buffer_offset_alignment = 64,
        .max_shared_memory_bytes = 32768,
        .max_workgroup_invocations = 1024,
        .max_workgroup_size = std::array<uint32_t, 3>{512, 512, 512},
        .max_workgroup_count = std::array<uint32_t, 3>{65535, 65535, 65535},
        .max_push_constants_bytes = 128,
        .max_storage_buffers_per_stage = 524288,
        .timestamps = true,
        .subgroup_size = 64,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = false,
        .shader_float16 = true,
        .buffer_device_address = false,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = false,
    },
    {
        .name = "adreno-540",
        .device = "Qualcomm Adreno 540 (Sony Xperia XZ Premium)",
        .driver = "Qualcomm driver 14.339.2737, Android 8.0.0, Vulkan 1.0.49",
        .source = "vulkan.gpuinfo.org export VP_GPUINFO_Sony_Xperia_XZ_Premium_14_339_2737_"
                  "android_8_0_0: https://github.com/KhronosGroup/Vulkan-ValidationLayers/blob/"
                  "dbb9f6b61a0524fb4364b03ce31d4e8ca0e8a256/tests/device_profiles/adreno_540.json",
        .notes = "a Vulkan 1.0 report: no maxMemoryAllocationSize, subgroups or workgroup size in "
                 "it, nor memory heaps (all unclamped); remat itself needs a Vulkan 1.1 driver",
        .max_storage_buffer_range = 2147483647,
        .min_storage_buffer_offset_alignment = 64,
        .max_texel_buffer_elements = 65536,
        .min_texel_buffer_offset_alignment = 64,
        .max_shared_memory_bytes = 32768,
        .max_workgroup_invocations = 1024,
        .max_workgroup_count = std::array<uint32_t, 3>{65535, 65535, 65535},
        .max_push_constants_bytes = 128,
        .max_storage_buffers_per_stage = 24,
        .timestamps = true,
        .storage_buffer_16bit = false,
        .shader_float16 = false,
        .buffer_device_address = false,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = false,
    },
    {
        .name = "intel-hd-520",
        .device = "Intel HD Graphics 520 (Skylake GT2)",
        .driver = "Mesa ANV 17.2.4, Linux, Vulkan 1.0.54",
        .source = "vulkan.gpuinfo.org export VP_GPUINFO_Intel_R__HD_Graphics_520__Skylake_GT2__17_"
                  "2_4_arch_unknown: https://github.com/KhronosGroup/Vulkan-ValidationLayers/blob/"
                  "dbb9f6b61a0524fb4364b03ce31d4e8ca0e8a256/tests/device_profiles/"
                  "intel_hd_graphics_520_skylake_gt2.json",
        .notes = "a Vulkan 1.0 report: no maxMemoryAllocationSize, subgroups or workgroup size in "
                 "it, nor memory heaps (all unclamped); remat itself needs a Vulkan 1.1 driver",
        .max_storage_buffer_range = 1073741824,
        .min_storage_buffer_offset_alignment = 4,
        .max_texel_buffer_elements = 134217728,
        .min_texel_buffer_offset_alignment = 1,
        .max_shared_memory_bytes = 32768,
        .max_workgroup_invocations = 896,
        .max_workgroup_count = std::array<uint32_t, 3>{65535, 65535, 65535},
        .max_push_constants_bytes = 128,
        .max_storage_buffers_per_stage = 64,
        .timestamps = false,
        .storage_buffer_16bit = false,
        .shader_float16 = false,
        .buffer_device_address = false,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = false,
    },
    {
        .name = "radeon-rx-480",
        .device = "AMD Radeon RX 480 (Polaris 10)",
        .driver = "AMD driver 2.0.27 (the export does not name it), Linux, Vulkan 1.1.70",
        .source = "vulkan.gpuinfo.org export VP_GPUINFO_AMD_Radeon__TM__RX_480_Graphics_2_0_27_"
                  "arch_unknown: https://github.com/KhronosGroup/Vulkan-ValidationLayers/blob/"
                  "dbb9f6b61a0524fb4364b03ce31d4e8ca0e8a256/tests/device_profiles/"
                  "amd_radeon_rx_480.json",
        .notes = "subgroups, workgroup size and memory heaps not in the export (unclamped)",
        .max_storage_buffer_range = kU32Max,
        .max_memory_allocation_size = 2147483648,
        .min_storage_buffer_offset_alignment = 4,
        .max_texel_buffer_elements = kU32Max,
        .min_texel_buffer_offset_alignment = 1,
        .max_shared_memory_bytes = 32768,
        .max_workgroup_invocations = 1024,
        .max_workgroup_count = std::array<uint32_t, 3>{65535, 65535, 65535},
        .max_push_constants_bytes = 128,
        .max_storage_buffers_per_stage = kU32Max,
        .timestamps = true,
        .storage_buffer_16bit = true,
        .shader_float16 = false,
        .buffer_device_address = false,
        .cooperative_matrix = false,
        .push_descriptors = false,
        .memory_budget = false,
    },
    {
        .name = "apple-m1",
        .device = "Apple M1 (MoltenVK)",
        .driver = "MoltenVK 1.4.1 (driver 0.2.2209), macOS 26.5.1, Vulkan 1.4.334",
        .source = "vulkan.gpuinfo.org export VP_GPUINFO_Apple_M1_0_2_2209_macos_26_5_1: "
                  "https://github.com/KhronosGroup/Vulkan-Profiles/blob/"
                  "910ea35629aa7ca7cb96335877e1abf253df704e/profiles/LunarG/"
                  "VP_LUNARG_desktop_baseline_2026/vp_gpuinfo_apple_m1_0_2_2209_macos_26_5_1.json",
        .notes = "memory heaps not in the export (unclamped); Metal varies the subgroup size from "
                 "4 to 32",
        .max_storage_buffer_range = kU32Max,
        .max_memory_allocation_size = 4294967296,
        .min_storage_buffer_offset_alignment = 16,
        .max_texel_buffer_elements = 67108864,
        .min_texel_buffer_offset_alignment = 16,
        .max_shared_memory_bytes = 32768,
        .max_workgroup_invocations = 1024,
        .max_workgroup_size = std::array<uint32_t, 3>{1024, 1024, 1024},
        .max_workgroup_count = std::array<uint32_t, 3>{1073741824, 1073741824, 1073741824},
        .max_push_constants_bytes = 4096,
        .max_storage_buffers_per_stage = 31,
        .timestamps = true,
        .subgroup_size = 32,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = true,
        .storage_buffer_16bit = true,
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = true,
    },
    {
        .name = "intel-uhd-620",
        .device = "Intel UHD Graphics 620 (Whiskey Lake GT2)",
        .driver = "Mesa ANV 23.1.7, Linux, Vulkan 1.3.246",
        .source = "vulkan.gpuinfo.org export "
                  "VP_GPUINFO_Intel_R__UHD_Graphics_620__WHL_GT2__23_1_7_arch_unknown: "
                  "https://github.com/KhronosGroup/Vulkan-Profiles/blob/"
                  "910ea35629aa7ca7cb96335877e1abf253df704e/profiles/LunarG/"
                  "VP_LUNARG_desktop_baseline_2024/"
                  "vp_gpuinfo_intel_r__uhd_graphics_620__whl_gt2__23_1_7_arch_unknown.json",
        .notes = "memory heaps not in the export (unclamped); the driver varies the subgroup size "
                 "from 8 to 32",
        .max_storage_buffer_range = kU32Max,
        .max_memory_allocation_size = 15538538496,
        .min_storage_buffer_offset_alignment = 4,
        .max_texel_buffer_elements = 134217728,
        .min_texel_buffer_offset_alignment = 16,
        .max_shared_memory_bytes = 65536,
        .max_workgroup_invocations = 1024,
        .max_workgroup_size = std::array<uint32_t, 3>{1024, 1024, 1024},
        .max_workgroup_count = std::array<uint32_t, 3>{65535, 65535, 65535},
        .max_push_constants_bytes = 128,
        .max_storage_buffers_per_stage = 65535,
        .timestamps = true,
        .subgroup_size = 32,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = true,
        .storage_buffer_16bit = true,
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = true,
    },
    {
        .name = "intel-iris-xe",
        .device = "Intel Iris Xe Graphics (Tiger Lake GT2)",
        .driver = "Mesa ANV 26.1.3, Linux, Vulkan 1.4.348",
        .source = "vulkan.gpuinfo.org export "
                  "VP_GPUINFO_Intel_R__Iris_R__Xe_Graphics__TGL_GT2__26_1_3_void_unknown: "
                  "https://github.com/KhronosGroup/Vulkan-Profiles/blob/"
                  "910ea35629aa7ca7cb96335877e1abf253df704e/profiles/LunarG/"
                  "VP_LUNARG_desktop_baseline_2026/"
                  "vp_gpuinfo_intel_r__iris_r__xe_graphics__tgl_gt2__26_1_3_void_unknown.json",
        .notes = "memory heaps not in the export (unclamped); the driver varies the subgroup size "
                 "from 8 to 32",
        .max_storage_buffer_range = kU32Max,
        .max_memory_allocation_size = 12409119744,
        .min_storage_buffer_offset_alignment = 4,
        .max_texel_buffer_elements = 134217728,
        .min_texel_buffer_offset_alignment = 16,
        .max_shared_memory_bytes = 49152,
        .max_workgroup_invocations = 1024,
        .max_workgroup_size = std::array<uint32_t, 3>{1024, 1024, 1024},
        .max_workgroup_count = std::array<uint32_t, 3>{2147483647, 65535, 65535},
        .max_push_constants_bytes = 256,
        .max_storage_buffers_per_stage = 201326592,
        .timestamps = true,
        .subgroup_size = 32,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = true,
        .storage_buffer_16bit = true,
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = true,
    },
    {
        .name = "nvidia-rtx-4070",
        .device = "NVIDIA GeForce RTX 4070",
        .driver = "NVIDIA 551.61, Windows 11, Vulkan 1.3.277",
        .source =
            "vulkan.gpuinfo.org export VP_GPUINFO_NVIDIA_GeForce_RTX_4070_551_61_0_0_windows_11: "
            "https://github.com/KhronosGroup/Vulkan-Profiles/blob/"
            "910ea35629aa7ca7cb96335877e1abf253df704e/profiles/LunarG/"
            "VP_LUNARG_desktop_baseline_2024/"
            "vp_gpuinfo_nvidia_geforce_rtx_4070_551_61_0_0_windows_11.json",
        .notes = "memory heaps not in the export (unclamped)",
        .max_storage_buffer_range = kU32Max,
        .max_memory_allocation_size = 4292870144,
        .min_storage_buffer_offset_alignment = 16,
        .max_texel_buffer_elements = 134217728,
        .min_texel_buffer_offset_alignment = 16,
        .max_shared_memory_bytes = 49152,
        .max_workgroup_invocations = 1024,
        .max_workgroup_size = std::array<uint32_t, 3>{1024, 1024, 64},
        .max_workgroup_count = std::array<uint32_t, 3>{2147483647, 65535, 65535},
        .max_push_constants_bytes = 256,
        .max_storage_buffers_per_stage = 1048576,
        .timestamps = true,
        .subgroup_size = 32,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = true,
        .storage_buffer_16bit = true,
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = true,
        .push_descriptors = true,
        .memory_budget = true,
    },
    {
        .name = "vulkan-minimum",
        .device = "the least a conformant Vulkan 1.1+ device may report",
        .driver = "(none: the specification's required limits)",
        .source =
            "Vulkan 1.3 specification, \"Limit Requirements\" table (maxMemoryAllocationSize: "
            "VkPhysicalDeviceMaintenance3Properties, at least 2^30); the same values as "
            "https://github.com/KhronosGroup/Vulkan-ValidationLayers/blob/"
            "9fe6278b5291a268c2369053ae62a6b32446172d/tests/device_profiles/min_core.json",
        .notes = "the specification sets no heap size (unclamped); every optional feature off",
        .max_storage_buffer_range = VulkanRequiredLimits::max_storage_buffer_range,
        .max_memory_allocation_size = VulkanRequiredLimits::max_memory_allocation_size,
        .min_storage_buffer_offset_alignment =
            VulkanRequiredLimits::max_storage_buffer_offset_alignment,
        .max_texel_buffer_elements = VulkanRequiredLimits::max_texel_buffer_elements,
        .min_texel_buffer_offset_alignment =
            VulkanRequiredLimits::max_texel_buffer_offset_alignment,
        .max_shared_memory_bytes = VulkanRequiredLimits::max_shared_memory_bytes,
        .max_workgroup_invocations = VulkanRequiredLimits::max_workgroup_invocations,
        .max_workgroup_size = VulkanRequiredLimits::max_workgroup_size,
        .max_workgroup_count = VulkanRequiredLimits::max_workgroup_count,
        .max_push_constants_bytes = VulkanRequiredLimits::max_push_constants_bytes,
        .max_storage_buffers_per_stage = VulkanRequiredLimits::max_storage_buffers_per_stage,
        .timestamps = false,
        .subgroup_size = VulkanRequiredLimits::subgroup_size,
        .subgroup_arithmetic = false,
        .subgroup_ballot = false,
        .subgroup_vote = false,
        .subgroup_shuffle = false,
        .subgroup_quad = false,
        .storage_buffer_16bit = false,
        .shader_float16 = false,
        .buffer_device_address = false,
        .cooperative_matrix = false,
        .push_descriptors = false,
        .memory_budget = false,
    },
};

template <class T>
void clamp_max(T& value, const std::optional<T>& limit) {
  if (limit) value = std::min(value, *limit);
}

void clamp_alignment(uint64_t& value, const std::optional<uint64_t>& profile) {
  if (profile) value = std::max(value, *profile);
}

void clamp_feature(bool& value, const std::optional<bool>& profile) {
  if (profile) value = value && *profile;
}

void drop_extension(PhysicalDeviceSnapshot& d, bool supported, std::string_view name) {
  if (supported) return;
  std::erase(d.extensions, std::string(name));
}

void clamp_limits(PhysicalDeviceSnapshot& d, const DeviceProfile& p) {
  clamp_max(d.max_storage_buffer_range, p.max_storage_buffer_range);
  clamp_max(d.max_memory_allocation_size, p.max_memory_allocation_size);
  clamp_alignment(d.min_storage_buffer_offset_alignment, p.min_storage_buffer_offset_alignment);
  clamp_max(d.max_texel_buffer_elements, p.max_texel_buffer_elements);
  clamp_alignment(d.min_texel_buffer_offset_alignment, p.min_texel_buffer_offset_alignment);
  clamp_max(d.max_shared_memory_bytes, p.max_shared_memory_bytes);
  clamp_max(d.max_workgroup_invocations, p.max_workgroup_invocations);
  for (int i = 0; i < 3; ++i) {
    if (p.max_workgroup_size)
      d.max_workgroup_size[i] = std::min(d.max_workgroup_size[i], (*p.max_workgroup_size)[i]);
    if (p.max_workgroup_count)
      d.max_workgroup_count[i] = std::min(d.max_workgroup_count[i], (*p.max_workgroup_count)[i]);
  }
  clamp_max(d.max_push_constants_bytes, p.max_push_constants_bytes);
  clamp_max(d.max_storage_buffers_per_stage, p.max_storage_buffers_per_stage);
  clamp_feature(d.timestamps, p.timestamps);
}

void clamp_subgroups(PhysicalDeviceSnapshot& d, const DeviceProfile& p) {
  clamp_feature(d.subgroup_arithmetic, p.subgroup_arithmetic);
  clamp_feature(d.subgroup_ballot, p.subgroup_ballot);
  clamp_feature(d.subgroup_vote, p.subgroup_vote);
  clamp_feature(d.subgroup_shuffle, p.subgroup_shuffle);
  clamp_feature(d.subgroup_quad, p.subgroup_quad);
  if (p.subgroup_size && *p.subgroup_size != d.subgroup_size)
    d.subgroup_arithmetic = d.subgroup_ballot = d.subgroup_vote = d.subgroup_shuffle =
        d.subgroup_quad = false;
}

void clamp_features(PhysicalDeviceSnapshot& d, const DeviceProfile& p) {
  clamp_feature(d.storage_buffer_16bit, p.storage_buffer_16bit);
  clamp_feature(d.shader_float16, p.shader_float16);
  clamp_feature(d.buffer_device_address, p.buffer_device_address);
  clamp_feature(d.cooperative_matrix, p.cooperative_matrix);
  clamp_feature(d.push_descriptors, p.push_descriptors);
  clamp_feature(d.memory_budget, p.memory_budget);
  // plan_device enables extensions by the flags; the list follows them so no reader of it sees an
  // extension the profiled GPU lacks.
  drop_extension(d, d.cooperative_matrix, "VK_KHR_cooperative_matrix");
  drop_extension(d, d.push_descriptors, "VK_KHR_push_descriptor");
  drop_extension(d, d.memory_budget, "VK_EXT_memory_budget");
  drop_extension(d, d.shader_float16, "VK_KHR_shader_float16_int8");
  drop_extension(d, d.buffer_device_address, "VK_KHR_buffer_device_address");
  if (!d.memory_budget)
    for (auto& h : d.heaps) h.budget_bytes = 0;  // the snapshot's "extension absent"
}

void clamp_heaps(PhysicalDeviceSnapshot& d, const DeviceProfile& p) {
  if (!p.device_local_bytes) return;
  uint64_t left = *p.device_local_bytes;
  for (auto& h : d.heaps) {
    if (!h.device_local) continue;
    h.size_bytes = std::min(h.size_bytes, left);
    h.budget_bytes = std::min(h.budget_bytes, h.size_bytes);
    left -= h.size_bytes;
  }
}

template <class T>
std::string below(std::string_view field, T value, T required) {
  return std::string(field) + " " + std::to_string(value) + " < " + std::to_string(required);
}

}  // namespace

std::span<const DeviceProfile> device_profiles() {
  return kProfiles;
}

const DeviceProfile* find_device_profile(std::string_view name) {
  for (const auto& p : kProfiles)
    if (p.name == name) return &p;
  return nullptr;
}

std::string device_profile_names() {
  std::string s;
  for (const auto& p : kProfiles) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

const DeviceProfile& device_profile(std::string_view name) {
  if (const DeviceProfile* p = find_device_profile(name)) return *p;
  throw std::invalid_argument("unknown device profile '" + std::string(name) +
                              "'; known profiles: " + device_profile_names());
}

PhysicalDeviceSnapshot apply_device_profile(PhysicalDeviceSnapshot d, const DeviceProfile& p) {
  clamp_limits(d, p);
  clamp_subgroups(d, p);
  clamp_features(d, p);
  clamp_heaps(d, p);
  d.profile = std::string(p.name);
  d.name += " as " + d.profile;
  return d;
}

std::optional<std::string> below_required_limits(const DeviceProfile& p) {
  using R = VulkanRequiredLimits;
  if (p.max_storage_buffer_range && *p.max_storage_buffer_range < R::max_storage_buffer_range)
    return below("maxStorageBufferRange", *p.max_storage_buffer_range, R::max_storage_buffer_range);
  if (p.max_memory_allocation_size && *p.max_memory_allocation_size < R::max_memory_allocation_size)
    return below("maxMemoryAllocationSize", *p.max_memory_allocation_size,
                 R::max_memory_allocation_size);
  if (p.min_storage_buffer_offset_alignment &&
      *p.min_storage_buffer_offset_alignment > R::max_storage_buffer_offset_alignment)
    return "minStorageBufferOffsetAlignment " +
           std::to_string(*p.min_storage_buffer_offset_alignment) + " > 256";
  if (p.max_texel_buffer_elements && *p.max_texel_buffer_elements < R::max_texel_buffer_elements)
    return below("maxTexelBufferElements", *p.max_texel_buffer_elements,
                 R::max_texel_buffer_elements);
  if (p.min_texel_buffer_offset_alignment &&
      *p.min_texel_buffer_offset_alignment > R::max_texel_buffer_offset_alignment)
    return "minTexelBufferOffsetAlignment " + std::to_string(*p.min_texel_buffer_offset_alignment) +
           " > 256";
  if (p.max_shared_memory_bytes && *p.max_shared_memory_bytes < R::max_shared_memory_bytes)
    return below("maxComputeSharedMemorySize", *p.max_shared_memory_bytes,
                 R::max_shared_memory_bytes);
  if (p.max_workgroup_invocations && *p.max_workgroup_invocations < R::max_workgroup_invocations)
    return below("maxComputeWorkGroupInvocations", *p.max_workgroup_invocations,
                 R::max_workgroup_invocations);
  for (int i = 0; i < 3; ++i) {
    if (p.max_workgroup_size && (*p.max_workgroup_size)[i] < R::max_workgroup_size[i])
      return below("maxComputeWorkGroupSize[" + std::to_string(i) + "]", (*p.max_workgroup_size)[i],
                   R::max_workgroup_size[i]);
    if (p.max_workgroup_count && (*p.max_workgroup_count)[i] < R::max_workgroup_count[i])
      return below("maxComputeWorkGroupCount[" + std::to_string(i) + "]",
                   (*p.max_workgroup_count)[i], R::max_workgroup_count[i]);
  }
  if (p.max_push_constants_bytes && *p.max_push_constants_bytes < R::max_push_constants_bytes)
    return below("maxPushConstantsSize", *p.max_push_constants_bytes, R::max_push_constants_bytes);
  if (p.max_storage_buffers_per_stage &&
      *p.max_storage_buffers_per_stage < R::max_storage_buffers_per_stage)
    return below("maxPerStageDescriptorStorageBuffers", *p.max_storage_buffers_per_stage,
                 R::max_storage_buffers_per_stage);
  if (p.subgroup_size && *p.subgroup_size < R::subgroup_size)
    return below("subgroupSize", *p.subgroup_size, R::subgroup_size);
  return std::nullopt;
}

}  // namespace remat

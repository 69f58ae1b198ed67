// "Plan, then create": a plain snapshot of a physical device, and the pure decisions made from it
// (which device to pick, which extensions and features to enable, which kernel variants fit).
// Nothing here calls Vulkan, so all of it is unit-tested without a device.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/vulkan/matmul_tiles.h"

namespace remat {

enum class DeviceKind { discrete, integrated, virtual_gpu, cpu, other };
std::string_view device_kind_name(DeviceKind k);

struct MemoryHeapInfo {
  uint64_t size_bytes = 0;    // heap size as reported by the driver
  uint64_t budget_bytes = 0;  // VK_EXT_memory_budget budget, 0 when the extension is absent
  bool device_local = false;  // VK_MEMORY_HEAP_DEVICE_LOCAL_BIT
};

// Everything remat needs to know about one physical device, copied out of Vulkan.
struct PhysicalDeviceSnapshot {
  uint32_t index = 0;       // position in vkEnumeratePhysicalDevices order
  std::string name;         // deviceName, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string driver_name;  // VkPhysicalDeviceDriverProperties::driverName ("" if unknown)
  std::string driver_info;  // driverInfo, e.g. "Mesa 22.3.6"
  std::string profile;      // the device profile it acts within ("" for none; device_profiles.h)
  DeviceKind kind = DeviceKind::other;
  uint32_t vendor_id = 0;  // PCI vendor id (0x10DE NVIDIA, 0x1002 AMD, 0x8086 Intel, 0x10005 Mesa)
  uint32_t api_version = 0;     // VK_MAKE_API_VERSION encoded
  uint32_t driver_version = 0;  // vendor-specific encoding

  // Limits that decide tensor placement and kernel shapes.
  uint64_t max_storage_buffer_range = 0;     // bytes one storage-buffer binding may span
  uint64_t max_memory_allocation_size = 0;   // bytes one vkAllocateMemory may return
  uint32_t max_memory_allocation_count = 0;  // allocations that may exist at once (0: unknown)
  uint64_t min_storage_buffer_offset_alignment = 0;
  uint64_t max_texel_buffer_elements = 0;  // texels one texel-buffer view may span
  uint64_t min_texel_buffer_offset_alignment = 0;
  uint32_t max_shared_memory_bytes = 0;  // maxComputeSharedMemorySize
  uint32_t max_workgroup_invocations = 0;
  std::array<uint32_t, 3> max_workgroup_size{};
  std::array<uint32_t, 3> max_workgroup_count{};
  uint32_t max_push_constants_bytes = 0;
  uint32_t max_storage_buffers_per_stage = 0;
  bool timestamps = false;            // timestampComputeAndGraphics
  float timestamp_period_ns = 0;      // nanoseconds per timestamp tick
  bool compute_queue = false;         // a queue family with VK_QUEUE_COMPUTE_BIT exists
  uint32_t compute_queue_family = 0;  // first such family (prefers compute without graphics)

  // Subgroups, as seen from compute shaders.
  uint32_t subgroup_size = 0;
  bool subgroup_arithmetic = false;
  bool subgroup_ballot = false;
  bool subgroup_vote = false;
  bool subgroup_shuffle = false;
  bool subgroup_quad = false;

  // Optional features (supported, not necessarily enabled).
  bool storage_buffer_16bit = false;   // storageBuffer16BitAccess
  bool shader_float16 = false;         // shaderFloat16
  bool buffer_device_address = false;  // bufferDeviceAddress
  bool cooperative_matrix = false;     // VK_KHR_cooperative_matrix
  bool push_descriptors = false;       // VK_KHR_push_descriptor
  bool memory_budget = false;          // VK_EXT_memory_budget

  std::vector<std::string> extensions;  // every device extension name
  std::vector<MemoryHeapInfo> heaps;

  bool has_extension(std::string_view name) const;
  uint64_t device_local_bytes() const;  // sum of device-local heap sizes
};

// Driver and device traits that change which kernel variant is fastest, as named flags.
struct DeviceQuirks {
  // CPU implementations (lavapipe, SwiftShader) run a workgroup's invocations as coroutines, so
  // barrier() costs a context switch: prefer register-tiled kernels without shared memory.
  bool barriers_are_expensive = false;
  // Bindings above this many bytes must be split or reached through buffer device address.
  uint64_t max_binding_bytes = 0;
  // Loop iterations one invocation may run in total before the driver silently stops its loops;
  // 0 means no such limit. llvmpipe's gallivm counts every loop of an invocation against 65,535
  // (LP_MAX_TGSI_LOOP_ITERATIONS), so kernels with long per-invocation loops split or unroll them.
  uint32_t max_loop_iterations = 0;
  // llvmpipe turns every storage-buffer load into a loop over the SIMD lanes with a bounds check
  // per lane (gallivm emit_load_mem), while texelFetch from a uniform texel buffer is a branch-free
  // gather: measured 4.7x cheaper per vec4 load on Mesa 22.3. The matmuls read their operands
  // through RGBA32F texel views there (matmul_*_texels.comp).
  bool texel_fetch_beats_storage_loads = false;
  // A bias gradient is summed by the weight gradient's texel dispatch (one more row of its
  // workgroups) instead of a dispatch of its own, where that kernel runs; the same bits either
  // way. Not a device fact but a lowering choice, on by default; tests turn it off to compare.
  bool bias_grad_in_weight_grad = true;
  // The texel matmuls' register tiles per shape class: from device facts (plan_device), replaced
  // per class by measured ones where a session can time them (runtime/matmul_tuning.h).
  MatmulTiling matmul_tiling = default_matmul_tiling(0);
};

// What to enable when creating the logical device.
struct DevicePlan {
  uint32_t queue_family = 0;
  std::vector<std::string> extensions;  // device extensions to enable
  bool enable_storage_buffer_16bit = false;
  bool enable_shader_float16 = false;
  bool enable_buffer_device_address = false;
  DeviceQuirks quirks;
};

// Decides the logical-device setup. Throws std::runtime_error if the device cannot run remat
// (no compute queue, API below 1.1).
DevicePlan plan_device(const PhysicalDeviceSnapshot& d);

// Picks a device: `selector` is an index ("1") or a case-insensitive name substring ("llvmpipe");
// empty picks the first discrete GPU, else integrated, else virtual, else CPU, else any.
// Returns nullopt and sets *why when nothing matches.
std::optional<std::size_t> choose_device(std::span<const PhysicalDeviceSnapshot> devices,
                                         std::string_view selector, std::string* why = nullptr);

std::string format_api_version(uint32_t v);

// Why `d` cannot run a kernel whose workgroup is `local` (x, y, z invocations) and which binds
// `storage_buffers` storage buffers: "a workgroup of 256 invocations, but ... allows 128
// (maxComputeWorkGroupInvocations)"; nullopt when it can. Shared memory is not checked (a
// kernel's use is not known without reflecting its SPIR-V).
std::optional<std::string> kernel_limit_violation(const PhysicalDeviceSnapshot& d,
                                                  std::array<uint32_t, 3> local,
                                                  uint32_t storage_buffers);

// The snapshot with maxMemoryAllocationSize lowered to `max_bytes` (never raised; 0 keeps it):
// how tests and users (REMAT_MAX_ALLOCATION) make a device split its buffers as a device with
// that limit would.
PhysicalDeviceSnapshot clamp_max_memory_allocation_size(PhysicalDeviceSnapshot d,
                                                        uint64_t max_bytes);

// REMAT_MAX_ALLOCATION's value ("8MiB", "1GiB", "65536"; KiB/MiB/GiB are 1024-based) in bytes;
// 0 when unset or empty. std::invalid_argument naming the variable for anything else.
uint64_t max_allocation_from_env();
uint64_t parse_max_allocation(std::string_view text);

}  // namespace remat

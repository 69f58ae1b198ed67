#include "runtime/vulkan/device_plan.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <stdexcept>

namespace remat {

std::string_view device_kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::discrete:
      return "discrete";
    case DeviceKind::integrated:
      return "integrated";
    case DeviceKind::virtual_gpu:
      return "virtual";
    case DeviceKind::cpu:
      return "cpu";
    case DeviceKind::other:
      return "other";
  }
  return "other";
}

bool PhysicalDeviceSnapshot::has_extension(std::string_view ext) const {
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

uint64_t PhysicalDeviceSnapshot::device_local_bytes() const {
  uint64_t total = 0;
  for (const auto& h : heaps)
    if (h.device_local) total += h.size_bytes;
  return total;
}

std::string format_api_version(uint32_t v) {
  // VK_API_VERSION_MAJOR/MINOR/PATCH without the Vulkan header: 7 | 10 | 12 bits.
  return std::to_string((v >> 22) & 0x7Fu) + "." + std::to_string((v >> 12) & 0x3FFu) + "." +
         std::to_string(v & 0xFFFu);
}

std::optional<std::string> kernel_limit_violation(const PhysicalDeviceSnapshot& d,
                                                  std::array<uint32_t, 3> local,
                                                  uint32_t storage_buffers) {
  const uint64_t invocations = uint64_t(local[0]) * local[1] * local[2];
  if (invocations > d.max_workgroup_invocations)
    return "a workgroup of " + std::to_string(invocations) + " invocations, but " + d.name +
           " allows " + std::to_string(d.max_workgroup_invocations) +
           " (maxComputeWorkGroupInvocations)";
  for (int i = 0; i < 3; ++i)
    if (local[i] > d.max_workgroup_size[i])
      return "a workgroup " + std::to_string(local[i]) + " wide in dimension " + std::to_string(i) +
             ", but " + d.name + " allows " + std::to_string(d.max_workgroup_size[i]) +
             " (maxComputeWorkGroupSize)";
  if (storage_buffers > d.max_storage_buffers_per_stage)
    return std::to_string(storage_buffers) + " storage buffers, but " + d.name + " allows " +
           std::to_string(d.max_storage_buffers_per_stage) +
           " (maxPerStageDescriptorStorageBuffers)";
  return std::nullopt;
}

DevicePlan plan_device(const PhysicalDeviceSnapshot& d) {
  constexpr uint32_t kVulkan11 = (1u << 22) | (1u << 12);
  if (d.api_version < kVulkan11)
    throw std::runtime_error(d.name + " supports Vulkan " + format_api_version(d.api_version) +
                             "; remat needs Vulkan 1.1 or newer");
  if (!d.compute_queue) throw std::runtime_error(d.name + " has no compute queue");

  DevicePlan plan;
  plan.queue_family = d.compute_queue_family;
  plan.enable_storage_buffer_16bit = d.storage_buffer_16bit;
  plan.enable_shader_float16 = d.shader_float16;
  plan.enable_buffer_device_address = d.buffer_device_address;
  // 16-bit storage is core in 1.1 but float16 arithmetic needs the extension on 1.1 devices.
  if (d.shader_float16 && d.has_extension("VK_KHR_shader_float16_int8"))
    plan.extensions.push_back("VK_KHR_shader_float16_int8");
  if (d.buffer_device_address && d.has_extension("VK_KHR_buffer_device_address"))
    plan.extensions.push_back("VK_KHR_buffer_device_address");
  if (d.memory_budget) plan.extensions.push_back("VK_EXT_memory_budget");

  plan.quirks.barriers_are_expensive = d.kind == DeviceKind::cpu;
  plan.quirks.max_binding_bytes = d.max_storage_buffer_range;
  // Mandatory limits (maxTexelBufferElements >= 65536) are too small to be worth a variant; every
  // CPU driver reports far more.
  plan.quirks.texel_fetch_beats_storage_loads = d.kind == DeviceKind::cpu &&
                                                d.max_texel_buffer_elements >= (1u << 24) &&
                                                d.min_texel_buffer_offset_alignment <= 16;
  if (d.driver_name == "llvmpipe" || d.name.rfind("llvmpipe", 0) == 0)
    plan.quirks.max_loop_iterations = 65535;
  // Measured tiles replace these per shape class where the session can time them
  // (runtime/matmul_tuning.h).
  plan.quirks.matmul_tiling = default_matmul_tiling(d.subgroup_size);
  // llvmpipe's compute subgroups are its SIMD width (min = max = subgroupSize), so a shader that
  // shuffles across exactly subgroupSize lanes sees them all.
  if (plan.quirks.texel_fetch_beats_storage_loads && d.subgroup_shuffle && d.subgroup_size >= 4 &&
      d.subgroup_size <= 64 && (d.subgroup_size & (d.subgroup_size - 1)) == 0)
    plan.quirks.matmul_tiling.shared_x_lanes = d.subgroup_size;
  return plan;
}

namespace {
std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int kind_rank(DeviceKind k) {
  switch (k) {
    case DeviceKind::discrete:
      return 0;
    case DeviceKind::integrated:
      return 1;
    case DeviceKind::virtual_gpu:
      return 2;
    case DeviceKind::cpu:
      return 3;
    case DeviceKind::other:
      return 4;
  }
  return 5;
}
}  // namespace

std::optional<std::size_t> choose_device(std::span<const PhysicalDeviceSnapshot> devices,
                                         std::string_view selector, std::string* why) {
  auto fail = [&](std::string msg) -> std::optional<std::size_t> {
    if (why) *why = std::move(msg);
    return std::nullopt;
  };
  if (devices.empty()) return fail("no Vulkan device found");
  if (!selector.empty()) {
    std::size_t index = 0;
    auto [ptr, ec] = std::from_chars(selector.data(), selector.data() + selector.size(), index);
    if (ec == std::errc() && ptr == selector.data() + selector.size()) {
      if (index < devices.size()) return index;
      return fail("device index " + std::string(selector) + " is out of range (found " +
                  std::to_string(devices.size()) + " devices)");
    }
    const std::string needle = lower(selector);
    for (std::size_t i = 0; i < devices.size(); ++i)
      if (lower(devices[i].name).find(needle) != std::string::npos) return i;
    return fail("no device name contains '" + std::string(selector) + "'");
  }
  std::size_t best = 0;
  for (std::size_t i = 1; i < devices.size(); ++i)
    if (kind_rank(devices[i].kind) < kind_rank(devices[best].kind)) best = i;
  return best;
}

PhysicalDeviceSnapshot clamp_max_memory_allocation_size(PhysicalDeviceSnapshot d,
                                                        uint64_t max_bytes) {
  if (max_bytes != 0 &&
      (d.max_memory_allocation_size == 0 || max_bytes < d.max_memory_allocation_size))
    d.max_memory_allocation_size = max_bytes;
  return d;
}

uint64_t parse_max_allocation(std::string_view text) {
  const auto bad = [&] {
    return std::invalid_argument(
        "REMAT_MAX_ALLOCATION must be a size in bytes like 8MiB, 1GiB "
        "or 65536, got '" +
        std::string(text) + "'");
  };
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || n == 0) throw bad();
  std::string unit(end, text.data() + text.size());
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = 0;
  if (unit == "kib")
    shift = 10;
  else if (unit == "mib")
    shift = 20;
  else if (unit == "gib")
    shift = 30;
  else if (!unit.empty() && unit != "b")
    throw bad();
  if (n > (UINT64_MAX >> shift)) throw bad();
  return n << shift;
}

uint64_t max_allocation_from_env() {
  const char* v = std::getenv("REMAT_MAX_ALLOCATION");
  return v && *v ? parse_max_allocation(v) : 0;
}

}  // namespace remat

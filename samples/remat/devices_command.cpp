// `remat devices [--json]`: every Vulkan device, what it supports, and which one remat picks.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/json_writer.h"
#include "cli_args.h"
#include "commands.h"
#include "device_args.h"
#include "runtime/vulkan/device_profiles.h"
#include "runtime/vulkan/error.h"
#include "runtime/vulkan/instance.h"

namespace remat::cli {

namespace {

std::string subgroup_ops(const PhysicalDeviceSnapshot& d) {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ",";
    s += name;
  };
  add(d.subgroup_arithmetic, "arithmetic");
  add(d.subgroup_ballot, "ballot");
  add(d.subgroup_vote, "vote");
  add(d.subgroup_shuffle, "shuffle");
  add(d.subgroup_quad, "quad");
  return s.empty() ? "none" : s;
}

std::string tile_text(const MatmulTile& t) {
  return std::to_string(t.rows) + "x" + std::to_string(t.cols) + "/" + std::to_string(t.wx);
}

// The kernel choices plan_device makes for the device (as clamped): two runs whose choices are
// equal run the same kernels.
void write_kernels_json(JsonWriter& j, const PhysicalDeviceSnapshot& d) {
  j.key("kernels").begin_object();
  try {
    const DevicePlan plan = plan_device(d);
    const DeviceQuirks& q = plan.quirks;
    j.field("register_tiled", q.barriers_are_expensive)
        .field("texel_fetch_matmuls", q.texel_fetch_beats_storage_loads)
        .field("max_binding_bytes", q.max_binding_bytes)
        .field("max_loop_iterations", q.max_loop_iterations)
        .field("matmul_outer_tile", tile_text(q.matmul_tiling.outer))
        .field("matmul_dot_tile", tile_text(q.matmul_tiling.dot))
        .field("shared_x_lanes", q.matmul_tiling.shared_x_lanes)
        .field("storage_16bit", plan.enable_storage_buffer_16bit);
  } catch (const std::exception& e) {
    j.field("unusable", std::string(e.what()));
  }
  j.end_object();
}

// A value the source does not give is null (the clamp leaves it as the device has it).
void write_profiles_json() {
  JsonWriter j;
  j.begin_object().key("profiles").begin_array();
  for (const DeviceProfile& p : device_profiles()) {
    j.begin_object().field("name", p.name).field("device", p.device).field("driver", p.driver);
    j.field("source", p.source).field("notes", p.notes);
    j.field("max_storage_buffer_range", p.max_storage_buffer_range);
    j.field("max_memory_allocation_size", p.max_memory_allocation_size);
    j.field("min_storage_buffer_offset_alignment", p.min_storage_buffer_offset_alignment);
    j.field("max_texel_buffer_elements", p.max_texel_buffer_elements);
    j.field("min_texel_buffer_offset_alignment", p.min_texel_buffer_offset_alignment);
    j.field("shared_memory_bytes", p.max_shared_memory_bytes);
    j.field("max_workgroup_invocations", p.max_workgroup_invocations);
    j.field("max_push_constants_bytes", p.max_push_constants_bytes);
    j.field("max_storage_buffers_per_stage", p.max_storage_buffers_per_stage);
    j.field("timestamps", p.timestamps);
    j.field("subgroup_size", p.subgroup_size);
    j.field("storage_16bit", p.storage_buffer_16bit);
    j.field("fp16", p.shader_float16);
    j.field("buffer_device_address", p.buffer_device_address);
    j.field("device_local_bytes", p.device_local_bytes);
    j.end_object();
  }
  j.end_array().end_object();
  std::printf("%s\n", j.str().c_str());
}

void write_profiles_text() {
  for (const DeviceProfile& p : device_profiles()) {
    std::printf("%-15.*s %.*s\n", int(p.name.size()), p.name.data(), int(p.device.size()),
                p.device.data());
    std::printf("                driver: %.*s\n", int(p.driver.size()), p.driver.data());
    std::printf("                source: %.*s\n", int(p.source.size()), p.source.data());
    if (!p.notes.empty())
      std::printf("                missing: %.*s\n", int(p.notes.size()), p.notes.data());
  }
  std::printf(
      "use one with --device-profile NAME or REMAT_DEVICE_PROFILE=NAME "
      "(docs/device-profiles.md)\n");
}

void write_json(const std::vector<PhysicalDeviceSnapshot>& devs,
                std::optional<std::size_t> chosen) {
  JsonWriter j;
  j.begin_object();
  j.field("chosen", chosen);
  j.key("devices").begin_array();
  for (const auto& d : devs) {
    j.begin_object();
    j.field("index", d.index).field("name", d.name).field("type", device_kind_name(d.kind));
    j.field("profile", d.profile);
    j.field("driver", d.driver_name).field("driver_info", d.driver_info);
    j.field("api_version", format_api_version(d.api_version)).field("vendor_id", d.vendor_id);
    j.field("device_local_bytes", d.device_local_bytes());
    j.key("heaps").begin_array();
    for (const auto& h : d.heaps)
      j.begin_object()
          .field("size_bytes", h.size_bytes)
          .field("budget_bytes", h.budget_bytes)
          .field("device_local", h.device_local)
          .end_object();
    j.end_array();
    j.field("subgroup_size", d.subgroup_size);
    j.key("subgroup_ops").begin_array();
    if (d.subgroup_arithmetic) j.value("arithmetic");
    if (d.subgroup_ballot) j.value("ballot");
    if (d.subgroup_vote) j.value("vote");
    if (d.subgroup_shuffle) j.value("shuffle");
    if (d.subgroup_quad) j.value("quad");
    j.end_array();
    j.field("shared_memory_bytes", d.max_shared_memory_bytes);
    j.field("max_workgroup_invocations", d.max_workgroup_invocations);
    j.field("max_storage_buffer_range", d.max_storage_buffer_range);
    j.field("max_memory_allocation_size", d.max_memory_allocation_size);
    j.field("min_storage_buffer_offset_alignment", d.min_storage_buffer_offset_alignment);
    j.field("max_texel_buffer_elements", d.max_texel_buffer_elements);
    j.field("min_texel_buffer_offset_alignment", d.min_texel_buffer_offset_alignment);
    j.field("timestamps", d.timestamps);
    j.field("fp16", d.shader_float16).field("storage_16bit", d.storage_buffer_16bit);
    j.field("buffer_device_address", d.buffer_device_address);
    j.field("cooperative_matrix", d.cooperative_matrix);
    j.field("push_descriptors", d.push_descriptors).field("memory_budget", d.memory_budget);
    j.field("compute_queue", d.compute_queue);
    write_kernels_json(j, d);
    j.end_object();
  }
  j.end_array().end_object();
  std::printf("%s\n", j.str().c_str());
}

void write_text(const std::vector<PhysicalDeviceSnapshot>& devs,
                std::optional<std::size_t> chosen) {
  for (const auto& d : devs) {
    const bool pick = chosen && *chosen == d.index;
    std::printf("%s[%u] %s\n", pick ? "* " : "  ", d.index, d.name.c_str());
    std::printf(
        "      type %s, Vulkan %s, driver %s %s\n", std::string(device_kind_name(d.kind)).c_str(),
        format_api_version(d.api_version).c_str(), d.driver_name.c_str(), d.driver_info.c_str());
    std::printf("      memory %s device-local", format_bytes(d.device_local_bytes()).c_str());
    if (d.memory_budget && !d.heaps.empty())
      std::printf(" (budget %s)", format_bytes(d.heaps.front().budget_bytes).c_str());
    std::printf(", max allocation %s, max binding %s, max RGBA32F texel view %s\n",
                format_bytes(d.max_memory_allocation_size).c_str(),
                format_bytes(d.max_storage_buffer_range).c_str(),
                format_bytes(d.max_texel_buffer_elements * 16).c_str());
    std::printf("      subgroup %u (%s), shared memory %s, workgroup ≤ %u invocations\n",
                d.subgroup_size, subgroup_ops(d).c_str(),
                format_bytes(d.max_shared_memory_bytes).c_str(), d.max_workgroup_invocations);
    std::printf(
        "      fp16 %s, 16-bit storage %s, buffer device address %s, cooperative matrix %s\n",
        d.shader_float16 ? "yes" : "no", d.storage_buffer_16bit ? "yes" : "no",
        d.buffer_device_address ? "yes" : "no", d.cooperative_matrix ? "yes" : "no");
  }
  if (chosen)
    std::printf("remat uses [%zu] (set REMAT_DEVICE=<index|name> to choose another)\n", *chosen);
  if (!devs.empty() && !devs.front().profile.empty()) {
    const DeviceProfile& p = device_profile(devs.front().profile);
    std::printf("within device profile %.*s: %.*s, %.*s\n", int(p.name.size()), p.name.data(),
                int(p.device.size()), p.device.data(), int(p.driver.size()), p.driver.data());
  }
}

}  // namespace

int run_devices(const std::vector<std::string>& argv) {
  const CommandSpec spec{
      "devices",
      "",
      0,
      "Lists every Vulkan device with its limits and features; '*' marks the one remat uses\n"
      "(REMAT_DEVICE=<index|name> chooses another). Under a device profile each device is shown\n"
      "as remat sees it: its limits clamped to the profile's.\n",
      {{"--json", "", "print the devices as JSON", ""},
       {"--profiles", "", "list the device profiles and their sources instead", ""},
       device_profile_flag()}};
  if (print_help_if_requested(argv, spec)) return 0;
  Args args(argv, spec);
  if (args.has("--profiles")) {
    args.has("--json") ? write_profiles_json() : write_profiles_text();
    return 0;
  }
  InstanceOptions options = InstanceOptions::from_environment();
  options.device_profile = device_profile_arg(args);
  auto instance = Instance::create(options);
  auto devs = instance->snapshots();
  std::string selector;
  if (const char* env = std::getenv("REMAT_DEVICE")) selector = env;
  std::string why;
  auto chosen = choose_device(devs, selector, &why);
  if (devs.empty())
    throw VulkanError(
        "no Vulkan device found: install Mesa's software driver lavapipe (Debian "
        "package 'mesa-vulkan-drivers')",
        VK_ERROR_INITIALIZATION_FAILED);
  if (args.has("--json"))
    write_json(devs, chosen);
  else
    write_text(devs, chosen);
  if (!chosen) throw UsageError("REMAT_DEVICE: " + why);
  return 0;
}

}  // namespace remat::cli

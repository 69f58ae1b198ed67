// The pure device decisions, tested on hand-made snapshots (no device needed).
#include <catch2/catch.hpp>

#include "runtime/vulkan/device_plan.h"

using namespace remat;

namespace {
PhysicalDeviceSnapshot make(uint32_t index, std::string name, DeviceKind kind) {
  PhysicalDeviceSnapshot s;
  s.index = index;
  s.name = std::move(name);
  s.kind = kind;
  s.api_version = (1u << 22) | (3u << 12);
  s.compute_queue = true;
  s.max_storage_buffer_range = 128u << 20;
  return s;
}
}  // namespace

TEST_CASE("choose_device prefers discrete, then integrated, virtual, cpu") {
  std::vector<PhysicalDeviceSnapshot> d = {make(0, "llvmpipe (LLVM 15)", DeviceKind::cpu),
                                           make(1, "Intel UHD 620", DeviceKind::integrated),
                                           make(2, "NVIDIA H100", DeviceKind::discrete)};
  CHECK(choose_device(d, "") == 2u);
  d.pop_back();
  CHECK(choose_device(d, "") == 1u);
  d.pop_back();
  CHECK(choose_device(d, "") == 0u);  // lavapipe is the default when nothing else exists
  d.push_back(make(1, "virtio", DeviceKind::virtual_gpu));
  CHECK(choose_device(d, "") == 1u);
}

TEST_CASE("choose_device honours an index or a case-insensitive name substring") {
  std::vector<PhysicalDeviceSnapshot> d = {make(0, "NVIDIA H100", DeviceKind::discrete),
                                           make(1, "llvmpipe (LLVM 15)", DeviceKind::cpu)};
  CHECK(choose_device(d, "1") == 1u);
  CHECK(choose_device(d, "LLVMPIPE") == 1u);
  CHECK(choose_device(d, "h100") == 0u);
  std::string why;
  CHECK_FALSE(choose_device(d, "7", &why).has_value());
  CHECK(why.find("out of range") != std::string::npos);
  CHECK_FALSE(choose_device(d, "radeon", &why).has_value());
  CHECK(why.find("radeon") != std::string::npos);
  CHECK_FALSE(choose_device({}, "", &why).has_value());
}

TEST_CASE("plan_device enables what the device supports and flags CPU drivers") {
  auto cpu = make(0, "llvmpipe", DeviceKind::cpu);
  cpu.shader_float16 = true;
  cpu.buffer_device_address = true;
  cpu.memory_budget = true;
  cpu.extensions = {"VK_EXT_memory_budget", "VK_KHR_shader_float16_int8"};
  cpu.compute_queue_family = 0;
  DevicePlan p = plan_device(cpu);
  CHECK(p.enable_shader_float16);
  CHECK(p.enable_buffer_device_address);
  CHECK(p.quirks.barriers_are_expensive);
  CHECK(p.quirks.max_binding_bytes == (128u << 20));
  CHECK(p.quirks.max_loop_iterations == 65535);  // llvmpipe's silent loop limit
  auto swiftshader = cpu;
  swiftshader.name = "SwiftShader Device (LLVM 10.0.0)";
  // Another CPU driver: no loop limit known.
  CHECK(plan_device(swiftshader).quirks.max_loop_iterations == 0);
  CHECK(std::find(p.extensions.begin(), p.extensions.end(), "VK_EXT_memory_budget") !=
        p.extensions.end());
  CHECK(std::find(p.extensions.begin(), p.extensions.end(), "VK_KHR_shader_float16_int8") !=
        p.extensions.end());

  auto gpu = make(1, "NVIDIA", DeviceKind::discrete);
  gpu.compute_queue_family = 2;
  DevicePlan g = plan_device(gpu);
  CHECK_FALSE(g.quirks.barriers_are_expensive);
  CHECK_FALSE(g.enable_shader_float16);
  CHECK(g.queue_family == 2);
  CHECK(g.extensions.empty());
}

TEST_CASE("plan_device picks texel-fetch matmuls for CPU drivers with large texel views only") {
  auto cpu = make(0, "llvmpipe", DeviceKind::cpu);
  cpu.max_texel_buffer_elements = 128u << 20;
  cpu.min_texel_buffer_offset_alignment = 16;
  CHECK(plan_device(cpu).quirks.texel_fetch_beats_storage_loads);
  auto small = cpu;
  small.max_texel_buffer_elements = 65536;  // the Vulkan minimum
  CHECK_FALSE(plan_device(small).quirks.texel_fetch_beats_storage_loads);
  auto coarse = cpu;
  coarse.min_texel_buffer_offset_alignment = 256;  // tensors are placed on 16-byte boundaries
  CHECK_FALSE(plan_device(coarse).quirks.texel_fetch_beats_storage_loads);
  auto gpu = cpu;
  gpu.kind = DeviceKind::discrete;
  CHECK_FALSE(plan_device(gpu).quirks.texel_fetch_beats_storage_loads);
}

TEST_CASE("plan_device rejects devices remat cannot use") {
  auto old = make(0, "old", DeviceKind::discrete);
  old.api_version = (1u << 22);  // Vulkan 1.0
  CHECK_THROWS_WITH(plan_device(old), Catch::Contains("Vulkan 1.1"));
  auto noq = make(0, "noq", DeviceKind::discrete);
  noq.compute_queue = false;
  CHECK_THROWS_WITH(plan_device(noq), Catch::Contains("no compute queue"));
}

TEST_CASE("format_api_version decodes VK_MAKE_API_VERSION") {
  CHECK(format_api_version((1u << 22) | (3u << 12) | 230u) == "1.3.230");
}

TEST_CASE("the allocation limit is clamped down, never up, and read from REMAT_MAX_ALLOCATION") {
  auto d = make(0, "gpu", DeviceKind::discrete);
  d.max_memory_allocation_size = uint64_t(2) << 30;
  CHECK(clamp_max_memory_allocation_size(d, 8u << 20).max_memory_allocation_size == (8u << 20));
  CHECK(clamp_max_memory_allocation_size(d, uint64_t(4) << 30).max_memory_allocation_size ==
        (uint64_t(2) << 30));
  CHECK(clamp_max_memory_allocation_size(d, 0).max_memory_allocation_size == (uint64_t(2) << 30));
  CHECK(clamp_max_memory_allocation_size(d, 8u << 20).name == "gpu");  // nothing else changes
  CHECK(parse_max_allocation("8MiB") == (8u << 20));
  CHECK(parse_max_allocation("1gib") == (1u << 30));
  CHECK(parse_max_allocation("65536") == 65536);
  CHECK(parse_max_allocation("3KiB") == 3072);
  for (const char* bad : {"", "0", "-1", "8MB", "lots", "8 MiB", "99999999999GiB"})
    CHECK_THROWS_WITH(parse_max_allocation(bad), Catch::Contains("REMAT_MAX_ALLOCATION"));
}

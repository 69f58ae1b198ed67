// Device profiles and their clamp, on hand-made snapshots (no device needed): every limit min'd
// (alignments max'd), features the profile lacks off, unknown names refused, and every row cited
// and at or above the Vulkan specification's required limits.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "runtime/vulkan/device_profiles.h"

using namespace remat;

namespace {

constexpr uint64_t kHuge = uint64_t(1) << 40;

// A device above every profile: each limit is larger, each alignment 1, every feature on.
PhysicalDeviceSnapshot roomy() {
  PhysicalDeviceSnapshot s;
  s.name = "big GPU";
  s.kind = DeviceKind::discrete;
  s.api_version = (1u << 22) | (3u << 12);
  s.compute_queue = true;
  s.max_storage_buffer_range = kHuge;
  s.max_memory_allocation_size = kHuge;
  s.min_storage_buffer_offset_alignment = 1;
  s.max_texel_buffer_elements = kHuge;
  s.min_texel_buffer_offset_alignment = 1;
  s.max_shared_memory_bytes = 1u << 30;
  s.max_workgroup_invocations = 1u << 30;
  s.max_workgroup_size = {1u << 30, 1u << 30, 1u << 30};
  s.max_workgroup_count = {4294967295u, 4294967295u, 4294967295u};
  s.max_push_constants_bytes = 1u << 20;
  s.max_storage_buffers_per_stage = 4294967295u;
  s.timestamps = true;
  s.subgroup_size = 32;
  s.subgroup_arithmetic = s.subgroup_ballot = s.subgroup_vote = s.subgroup_shuffle =
      s.subgroup_quad = true;
  s.storage_buffer_16bit = s.shader_float16 = s.buffer_device_address = true;
  s.cooperative_matrix = s.push_descriptors = s.memory_budget = true;
  s.extensions = {"VK_EXT_memory_budget", "VK_KHR_buffer_device_address",
                  "VK_KHR_cooperative_matrix", "VK_KHR_push_descriptor",
                  "VK_KHR_shader_float16_int8"};
  s.heaps = {{kHuge, kHuge / 2, true}, {kHuge, kHuge / 2, false}};
  return s;
}

// The same device at the specification's minimums with nothing optional.
PhysicalDeviceSnapshot cramped() {
  using R = VulkanRequiredLimits;
  PhysicalDeviceSnapshot s;
  s.name = "small GPU";
  s.max_storage_buffer_range = R::max_storage_buffer_range;
  s.max_memory_allocation_size = R::max_memory_allocation_size;
  s.min_storage_buffer_offset_alignment = R::max_storage_buffer_offset_alignment;
  s.max_texel_buffer_elements = R::max_texel_buffer_elements;
  s.min_texel_buffer_offset_alignment = R::max_texel_buffer_offset_alignment;
  s.max_shared_memory_bytes = R::max_shared_memory_bytes;
  s.max_workgroup_invocations = R::max_workgroup_invocations;
  s.max_workgroup_size = R::max_workgroup_size;
  s.max_workgroup_count = R::max_workgroup_count;
  s.max_push_constants_bytes = R::max_push_constants_bytes;
  s.max_storage_buffers_per_stage = R::max_storage_buffers_per_stage;
  s.subgroup_size = 1;
  s.heaps = {{1u << 20, 0, true}};
  return s;
}

// Where the profile gives a value the clamped field is exactly it (the device is above every
// profile); where it gives none the field is the device's.
template <class T, class U>
void check_limit(const std::optional<T>& profile, const U& clamped, const U& device) {
  if (profile)
    CHECK(clamped == static_cast<U>(*profile));
  else
    CHECK(clamped == device);
}

void check_feature(const std::optional<bool>& profile, bool clamped) {
  CHECK(clamped == profile.value_or(true));
}

}  // namespace

TEST_CASE("every device profile is cited and at or above the Vulkan spec's required limits") {
  REQUIRE(device_profiles().size() >= 6);
  std::set<std::string_view> names;
  for (const DeviceProfile& p : device_profiles()) {
    INFO(p.name);
    CHECK(names.insert(p.name).second);
    for (char c : p.name) CHECK(((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'));
    CHECK_FALSE(p.device.empty());
    CHECK_FALSE(p.driver.empty());
    CHECK(p.source.find("https://") != std::string_view::npos);
    const auto below = below_required_limits(p);
    CHECK_FALSE(below.has_value());
    if (below) INFO(*below);
    // The limits remat's plans turn on are the ones a row must not leave unknown.
    CHECK(p.max_storage_buffer_range.has_value());
    CHECK(p.max_workgroup_invocations.has_value());
  }
  CHECK(find_device_profile("vulkan-minimum") != nullptr);
}

TEST_CASE("every row says which kind of source its values come from") {
  for (const DeviceProfile& p : device_profiles()) {
    INFO(p.name);
    const bool report = p.source.find("vulkan.gpuinfo.org export ") == 0;
    const bool spec = p.source.find("Vulkan 1.3 specification") == 0;
    // A row read from an open driver's code says so, so no one takes it for a device's report.
    const bool driver_source =
        p.source.find("Mesa ") == 0 && p.notes.find("driver source, not a device report") == 0;
    CHECK(int(report) + int(spec) + int(driver_source) == 1);
  }
}

TEST_CASE("the GPU families docs/device-profiles.md names have rows") {
  for (std::string_view name :
       {"mali-g78", "adreno-540", "adreno-650-turnip", "adreno-740-turnip", "apple-m1",
        "apple-m3-max", "apple-m2-honeykrisp", "radeon-680m-radv", "intel-iris-xe",
        "nvidia-rtx-4070", "vulkan-minimum"}) {
    INFO(name);
    CHECK(find_device_profile(name) != nullptr);
  }
}

// A field the source lacks stays empty, and the row says so: a reader of `remat devices
// --profiles` must not take unclamped heaps for a GPU as large as the machine it runs on.
TEST_CASE("a row without device-local heap bytes says in its notes that heaps are unclamped") {
  for (const DeviceProfile& p : device_profiles()) {
    INFO(p.name << ": " << p.notes);
    if (!p.device_local_bytes) CHECK(p.notes.find("heap") != std::string_view::npos);
  }
}

// docs/device-profiles.md names every row in its source table, with the row's first URL, and
// gives it a column of values: a row added to the table alone would be an uncited one to a reader.
TEST_CASE("docs/device-profiles.md lists every row with its source and its values") {
  std::ifstream in(std::string(REMAT_SOURCE_DIR) + "/docs/device-profiles.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::size_t values = doc.find("| limit |");
  REQUIRE(values != std::string::npos);
  const std::string header = doc.substr(values, doc.find('\n', values) - values);
  for (const DeviceProfile& p : device_profiles()) {
    INFO(p.name);
    const std::string cell = "| `" + std::string(p.name) + "` |";
    CHECK(doc.find(cell) < values);
    CHECK(header.find("`" + std::string(p.name) + "`") != std::string::npos);
    const std::size_t url = p.source.find("https://");
    const std::string_view first_url =
        p.source.substr(url, p.source.find_first_of(" ;,)", url) - url);
    CHECK(doc.find(first_url) != std::string::npos);
  }
}

TEST_CASE("below_required_limits names the first field under the spec's minimum") {
  DeviceProfile p = *find_device_profile("vulkan-minimum");
  CHECK_FALSE(below_required_limits(p).has_value());
  p.max_storage_buffer_range = VulkanRequiredLimits::max_storage_buffer_range - 1;
  REQUIRE(below_required_limits(p).has_value());
  CHECK(below_required_limits(p)->find("maxStorageBufferRange") == 0);
  p = *find_device_profile("vulkan-minimum");
  p.max_shared_memory_bytes = 8192;
  CHECK(below_required_limits(p)->find("maxComputeSharedMemorySize") == 0);
  p = *find_device_profile("vulkan-minimum");
  p.min_storage_buffer_offset_alignment = 512;
  CHECK(below_required_limits(p)->find("minStorageBufferOffsetAlignment") == 0);
  p = *find_device_profile("vulkan-minimum");
  p.max_workgroup_size = std::array<uint32_t, 3>{128, 128, 32};
  CHECK(below_required_limits(p)->find("maxComputeWorkGroupSize[2]") == 0);
}

TEST_CASE("a profile clamps every limit of a larger device to its own and turns its features off") {
  const PhysicalDeviceSnapshot d = roomy();
  for (const DeviceProfile& p : device_profiles()) {
    INFO(p.name);
    const PhysicalDeviceSnapshot c = apply_device_profile(d, p);
    check_limit(p.max_storage_buffer_range, c.max_storage_buffer_range, d.max_storage_buffer_range);
    check_limit(p.max_memory_allocation_size, c.max_memory_allocation_size,
                d.max_memory_allocation_size);
    check_limit(p.min_storage_buffer_offset_alignment, c.min_storage_buffer_offset_alignment,
                d.min_storage_buffer_offset_alignment);
    check_limit(p.max_texel_buffer_elements, c.max_texel_buffer_elements,
                d.max_texel_buffer_elements);
    check_limit(p.min_texel_buffer_offset_alignment, c.min_texel_buffer_offset_alignment,
                d.min_texel_buffer_offset_alignment);
    check_limit(p.max_shared_memory_bytes, c.max_shared_memory_bytes, d.max_shared_memory_bytes);
    check_limit(p.max_workgroup_invocations, c.max_workgroup_invocations,
                d.max_workgroup_invocations);
    check_limit(p.max_workgroup_size, c.max_workgroup_size, d.max_workgroup_size);
    check_limit(p.max_workgroup_count, c.max_workgroup_count, d.max_workgroup_count);
    check_limit(p.max_push_constants_bytes, c.max_push_constants_bytes, d.max_push_constants_bytes);
    check_limit(p.max_storage_buffers_per_stage, c.max_storage_buffers_per_stage,
                d.max_storage_buffers_per_stage);
    check_feature(p.timestamps, c.timestamps);
    check_feature(p.storage_buffer_16bit, c.storage_buffer_16bit);
    check_feature(p.shader_float16, c.shader_float16);
    check_feature(p.buffer_device_address, c.buffer_device_address);
    check_feature(p.cooperative_matrix, c.cooperative_matrix);
    check_feature(p.push_descriptors, c.push_descriptors);
    check_feature(p.memory_budget, c.memory_budget);
    CHECK(c.has_extension("VK_KHR_cooperative_matrix") == c.cooperative_matrix);
    CHECK(c.has_extension("VK_EXT_memory_budget") == c.memory_budget);
    // The subgroup size stays the device's: kernels that choose by it run on the device.
    CHECK(c.subgroup_size == d.subgroup_size);
    CHECK(c.profile == p.name);
    CHECK(c.name == "big GPU as " + std::string(p.name));
    // Downstream follows: the binding limit the planner and kernels read is the profile's.
    CHECK(plan_device(c).quirks.max_binding_bytes == c.max_storage_buffer_range);
  }
}

TEST_CASE("a profile never raises a limit or turns on a feature the device lacks") {
  const PhysicalDeviceSnapshot d = cramped();
  for (const DeviceProfile& p : device_profiles()) {
    INFO(p.name);
    const PhysicalDeviceSnapshot c = apply_device_profile(d, p);
    CHECK(c.max_storage_buffer_range == d.max_storage_buffer_range);
    CHECK(c.max_memory_allocation_size == d.max_memory_allocation_size);
    CHECK(c.min_storage_buffer_offset_alignment == d.min_storage_buffer_offset_alignment);
    CHECK(c.max_texel_buffer_elements == d.max_texel_buffer_elements);
    CHECK(c.min_texel_buffer_offset_alignment == d.min_texel_buffer_offset_alignment);
    CHECK(c.max_shared_memory_bytes == d.max_shared_memory_bytes);
    CHECK(c.max_workgroup_invocations == d.max_workgroup_invocations);
    CHECK(c.max_workgroup_size == d.max_workgroup_size);
    CHECK(c.max_workgroup_count == d.max_workgroup_count);
    CHECK(c.max_push_constants_bytes == d.max_push_constants_bytes);
    CHECK(c.max_storage_buffers_per_stage == d.max_storage_buffers_per_stage);
    CHECK_FALSE((c.timestamps || c.storage_buffer_16bit || c.shader_float16 ||
                 c.buffer_device_address || c.cooperative_matrix || c.push_descriptors ||
                 c.memory_budget || c.subgroup_arithmetic || c.subgroup_shuffle));
    CHECK(c.heaps.front().size_bytes == d.heaps.front().size_bytes);
  }
}

TEST_CASE(
    "subgroup operations follow the profile, and all go off where its subgroup size differs") {
  PhysicalDeviceSnapshot d = roomy();
  DeviceProfile p{.name = "test", .subgroup_size = 32, .subgroup_ballot = false};
  PhysicalDeviceSnapshot c = apply_device_profile(d, p);
  CHECK(c.subgroup_size == 32);
  CHECK(c.subgroup_arithmetic);
  CHECK(c.subgroup_shuffle);
  CHECK_FALSE(c.subgroup_ballot);
  p.subgroup_size = 16;
  c = apply_device_profile(d, p);
  CHECK(c.subgroup_size == 32);
  CHECK_FALSE((c.subgroup_arithmetic || c.subgroup_ballot || c.subgroup_vote ||
               c.subgroup_shuffle || c.subgroup_quad));
}

TEST_CASE("a profile's device-local bytes cut the device-local heaps and their budgets") {
  const PhysicalDeviceSnapshot d = roomy();
  const DeviceProfile p{.name = "test", .device_local_bytes = uint64_t(3) << 30};
  const PhysicalDeviceSnapshot c = apply_device_profile(d, p);
  CHECK(c.device_local_bytes() == uint64_t(3) << 30);
  CHECK(c.heaps[0].budget_bytes == uint64_t(3) << 30);
  CHECK(c.heaps[1].size_bytes == d.heaps[1].size_bytes);  // host memory is not the GPU's
  // Without the figure the heaps are the device's.
  CHECK(apply_device_profile(d, DeviceProfile{.name = "none"}).heaps[0].size_bytes ==
        d.heaps[0].size_bytes);
}

TEST_CASE("an unknown device profile is refused with the known names") {
  CHECK(find_device_profile("mali-g78") != nullptr);
  CHECK(find_device_profile("Mali-G78") == nullptr);
  try {
    device_profile("mali-g99");
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find("unknown device profile 'mali-g99'") == 0);
    for (const DeviceProfile& p : device_profiles())
      CHECK(what.find(std::string(p.name)) != std::string::npos);
  }
}

TEST_CASE("kernel_limit_violation names the limit a kernel's workgroup or bindings exceed") {
  PhysicalDeviceSnapshot d = cramped();
  d.name = "phone";
  CHECK_FALSE(kernel_limit_violation(d, {128, 1, 1}, 4).has_value());
  CHECK_FALSE(kernel_limit_violation(d, {8, 8, 2}, 0).has_value());
  auto why = kernel_limit_violation(d, {256, 1, 1}, 2);
  REQUIRE(why.has_value());
  CHECK(*why ==
        "a workgroup of 256 invocations, but phone allows 128 "
        "(maxComputeWorkGroupInvocations)");
  why = kernel_limit_violation(d, {1, 1, 65}, 2);
  REQUIRE(why.has_value());
  CHECK(why->find("(maxComputeWorkGroupSize)") != std::string::npos);
  why = kernel_limit_violation(d, {64, 1, 1}, 5);
  REQUIRE(why.has_value());
  CHECK(*why == "5 storage buffers, but phone allows 4 (maxPerStageDescriptorStorageBuffers)");
}

// remat on a device an application owns: Device::wrap runs real training there, leaves the
// application's device working and destroys nothing of the application's. The application talks
// to Vulkan through its own volk (globals), remat through its own tables, in one process.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "tests/runtime/app_vulkan.h"
#include "tests/runtime/tiny_training.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

std::vector<float> train_tiny(Device& device, std::vector<uint8_t>* params = nullptr) {
  Session s(device, test::tiny_config());
  std::vector<float> losses = {test::tiny_step(s, 0), test::tiny_step(s, 1)};
  if (params) *params = test::parameter_bytes(s);
  return losses;
}

}  // namespace

TEST_CASE("remat trains on an application's device and leaves it to the application") {
  test::AppVulkan app;
  // The application's volk globals: remat must never repoint them (to its own device, say).
  const PFN_vkQueueSubmit app_submit = vkQueueSubmit;
  const PFN_vkCreateBuffer app_create_buffer = vkCreateBuffer;
  std::vector<float> losses;
  std::vector<uint8_t> params;
  {
    auto device = Device::wrap(app.external());
    CHECK_FALSE(device->owned());
    CHECK_FALSE(device->instance().owned());
    CHECK(device->handle() == app.device());
    CHECK(device->physical() == app.physical());
    CHECK(device->plan().queue_family == app.family());
    CHECK(device->plan().extensions.empty());
    CHECK_FALSE(device->instance().validation_enabled());
    losses = train_tiny(*device, &params);
  }
  // Everything remat created is gone; the device is still the application's and still works.
  CHECK(app.device_usable());
  app.destroy();  // the validation layer names any object remat left on the device
  for (const auto& m : app.messages()) UNSCOPED_INFO(m);
  CHECK(app.messages().empty());

  // The same training on remat's own device of the same driver: the same bits.
  std::vector<uint8_t> own_params;
  const std::vector<float> own = train_tiny(test::device(), &own_params);
  REQUIRE(losses.size() == 2);
  CHECK(test::same_bits(losses, own));
  const bool same_parameters = params == own_params;  // not printed: megabytes
  CHECK(same_parameters);
  CHECK(vkQueueSubmit == app_submit);
  CHECK(vkCreateBuffer == app_create_buffer);
}

TEST_CASE("buffers on a wrapped device round-trip and are freed with remat's device") {
  test::AppVulkan app;
  {
    auto device = Device::wrap(app.external());
    const std::vector<float> data = {1.5f, -2.0f, 3.25f, 0.0f};
    Buffer b(*device, data.size() * 4, MemoryCategory::persistent, "roundtrip");
    upload(*device, b, std::span<const float>(data));
    CHECK(download<float>(*device, b, data.size()) == data);
    CHECK(device->ledger().stats().allocation_count == 1);
  }
  CHECK(app.device_usable());
  app.destroy();
  CHECK(app.messages().empty());
}

namespace {

// A layer between remat and the application's loader that hides compute from every queue family,
// as a graphics-only family would look.
PFN_vkGetInstanceProcAddr g_real_get = nullptr;
PFN_vkGetPhysicalDeviceQueueFamilyProperties g_real_families = nullptr;

VKAPI_ATTR void VKAPI_CALL families_without_compute(VkPhysicalDevice pd, uint32_t* n,
                                                    VkQueueFamilyProperties* props) {
  g_real_families(pd, n, props);
  if (props)
    for (uint32_t i = 0; i < *n; ++i) props[i].queueFlags &= ~VkQueueFlags(VK_QUEUE_COMPUTE_BIT);
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL get_without_compute(VkInstance instance,
                                                             const char* name) {
  if (std::string(name) == "vkGetPhysicalDeviceQueueFamilyProperties") {
    g_real_families =
        reinterpret_cast<PFN_vkGetPhysicalDeviceQueueFamilyProperties>(g_real_get(instance, name));
    return reinterpret_cast<PFN_vkVoidFunction>(families_without_compute);
  }
  return g_real_get(instance, name);
}

}  // namespace

TEST_CASE("wrapping bad handles is an invalid_argument naming the field") {
  test::AppVulkan app;
  const ExternalVulkan good = app.external();
  auto wrap_with = [&](auto&& change) {
    ExternalVulkan e = good;
    change(e);
    return Device::wrap(e);
  };
  using Catch::Contains;
  CHECK_THROWS_AS(wrap_with([](ExternalVulkan& e) { e.get_instance_proc_addr = nullptr; }),
                  std::invalid_argument);
  CHECK_THROWS_WITH(wrap_with([](ExternalVulkan& e) { e.get_instance_proc_addr = nullptr; }),
                    "ExternalVulkan.get_instance_proc_addr is null");
  CHECK_THROWS_WITH(wrap_with([](ExternalVulkan& e) { e.instance = VK_NULL_HANDLE; }),
                    "ExternalVulkan.instance is null");
  CHECK_THROWS_WITH(wrap_with([](ExternalVulkan& e) { e.physical_device = VK_NULL_HANDLE; }),
                    "ExternalVulkan.physical_device is null");
  CHECK_THROWS_WITH(wrap_with([](ExternalVulkan& e) { e.device = VK_NULL_HANDLE; }),
                    "ExternalVulkan.device is null");
  CHECK_THROWS_WITH(wrap_with([](ExternalVulkan& e) { e.queue = VK_NULL_HANDLE; }),
                    "ExternalVulkan.queue is null");
  CHECK_THROWS_AS(wrap_with([](ExternalVulkan& e) { e.queue_family_index = 99; }),
                  std::invalid_argument);
  CHECK_THROWS_WITH(wrap_with([](ExternalVulkan& e) { e.queue_family_index = 99; }),
                    Contains("queue_family_index 99 is out of range"));
  // A physical device of another instance (remat's own) is not the application's.
  CHECK_THROWS_AS(
      wrap_with([](ExternalVulkan& e) { e.physical_device = test::device().physical(); }),
      std::invalid_argument);
  CHECK_THROWS_WITH(
      wrap_with([](ExternalVulkan& e) { e.physical_device = test::device().physical(); }),
      Contains("is not one of ExternalVulkan.instance's physical devices"));
  g_real_get = good.get_instance_proc_addr;
  CHECK_THROWS_AS(
      wrap_with([](ExternalVulkan& e) { e.get_instance_proc_addr = get_without_compute; }),
      std::invalid_argument);
  CHECK_THROWS_WITH(
      wrap_with([](ExternalVulkan& e) { e.get_instance_proc_addr = get_without_compute; }),
      Contains("has no compute support"));

  // Nothing was created or destroyed on the application's device by the failed attempts.
  CHECK(app.device_usable());
  app.destroy();
  CHECK(app.messages().empty());
}

TEST_CASE("a device without storageBuffer16BitAccess refuses a plan with 16-bit weights") {
  // remat enables nothing on a device it did not create, so a wrapped device has no 16-bit
  // storage as far as remat knows: the session is refused before anything is allocated.
  test::AppVulkan app;
  {
    auto device = Device::wrap(app.external());
    REQUIRE_FALSE(device->plan().enable_storage_buffer_16bit);
    SessionConfig c;
    c.model = ModelConfig::preset("tiny");
    c.model.layers = 1;
    c.shape.batch = 1;
    c.shape.seq = 8;
    c.lora.rank = 2;
    c.shape.weight_dtype = DType::bf16;
    c.pipeline_cache_dir = std::nullopt;
    REQUIRE_THROWS_WITH(Session(*device, c),
                        Catch::Contains("storageBuffer16BitAccess") && Catch::Contains("bf16"));
    c.shape.weight_dtype = DType::f32;
    REQUIRE_NOTHROW(Session(*device, c));
  }
  app.destroy();
  CHECK(app.messages().empty());
}

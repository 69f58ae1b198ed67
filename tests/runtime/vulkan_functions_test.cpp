// remat's function tables: every entry loaded for a real device, and a missing function named
// instead of crashing at its first call.
#include <catch2/catch.hpp>

#include <string>

#include "runtime/vulkan/error.h"
#include "runtime/vulkan/functions.h"
#include "runtime/vulkan/loader.h"
#include "tests/support/test_device.h"

using namespace remat;

TEST_CASE("a device's instance and device tables are complete") {
  const InstanceFunctions& iv = test::device().instance().vk();
  const DeviceFunctions& dv = test::device().vk();
  std::string missing;
#define REMAT_CHECK_LOADED(table, name) \
  if (!table.name) missing += " " #name;
#define REMAT_CHECK_INSTANCE(name) REMAT_CHECK_LOADED(iv, name)
#define REMAT_CHECK_DEVICE(name) REMAT_CHECK_LOADED(dv, name)
  REMAT_VK_GLOBAL_FUNCTIONS(REMAT_CHECK_INSTANCE)
  REMAT_VK_INSTANCE_FUNCTIONS(REMAT_CHECK_INSTANCE)
  REMAT_VK_DEVICE_FUNCTIONS(REMAT_CHECK_DEVICE)
#undef REMAT_CHECK_DEVICE
#undef REMAT_CHECK_INSTANCE
#undef REMAT_CHECK_LOADED
  CHECK(missing.empty());
  CHECK(iv.vkGetInstanceProcAddr == system_vulkan_loader());
  // The test device enables validation, so the messenger's functions are there too.
  CHECK(iv.vkCreateDebugUtilsMessengerEXT != nullptr);
}

namespace {

PFN_vkGetInstanceProcAddr g_real = nullptr;
std::string g_hidden;

// The real loader with one function hidden.
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL get_hiding(VkInstance instance, const char* name) {
  return g_hidden == name ? nullptr : g_real(instance, name);
}

}  // namespace

TEST_CASE("a function the loader lacks is named") {
  g_real = system_vulkan_loader();
  g_hidden = "vkCreateInstance";
  CHECK_THROWS_AS(load_global_functions(get_hiding), VulkanError);
  CHECK_THROWS_WITH(load_global_functions(get_hiding),
                    "the Vulkan loader has no vkCreateInstance: remat needs Vulkan 1.1");
  CHECK_THROWS_WITH(load_global_functions(nullptr), Catch::Contains("no vkGetInstanceProcAddr"));

  g_hidden = "vkGetPhysicalDeviceProperties2";
  const InstanceFunctions global = load_global_functions(get_hiding);
  CHECK(global.vkEnumerateInstanceVersion != nullptr);
  CHECK_THROWS_WITH(
      load_instance_functions(global, test::device().instance().handle()),
      "the Vulkan instance has no vkGetPhysicalDeviceProperties2: remat needs Vulkan 1.1");
  CHECK_THROWS_WITH(load_device_functions(InstanceFunctions{}, test::device().handle()),
                    Catch::Contains("the Vulkan instance has no vkGetDeviceProcAddr"));
}

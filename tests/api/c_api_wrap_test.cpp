// remat_device_wrap: the C API on Vulkan objects an application owns. Training there matches a
// device remat opens itself bit for bit, and freeing remat's handles leaves the application's
// device working, with nothing of remat's left on it.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "remat/remat.h"
#include "tests/api/api_test_params.h"
#include "tests/runtime/app_vulkan.h"

using remat::test::pattern_batch;
using remat::test::small_params;

namespace {

remat_vulkan_handles handles_of(const remat::ExternalVulkan& e) {
  remat_vulkan_handles h{};
  h.struct_size = sizeof h;
  h.get_instance_proc_addr = reinterpret_cast<void*>(e.get_instance_proc_addr);
  h.instance = e.instance;
  h.physical_device = e.physical_device;
  h.device = e.device;
  h.queue = e.queue;
  h.queue_family_index = e.queue_family_index;
  return h;
}

std::vector<float> three_losses(remat_device* device) {
  const remat_session_params p = small_params();
  remat_session* s = nullptr;
  REQUIRE(remat_session_create(device, &p, &s) == REMAT_OK);
  std::vector<float> losses;
  for (int i = 0; i < 3; ++i) {
    const auto b = pattern_batch(16, 64, i);
    float loss = 0;
    REQUIRE(remat_session_step(s, b.tokens.data(), b.targets.data(), 16, &loss) == REMAT_OK);
    losses.push_back(loss);
  }
  remat_session_free(s);
  return losses;
}

}  // namespace

TEST_CASE("a wrapped app device trains like an opened one and stays the app's") {
  remat::test::AppVulkan app;
  const remat_vulkan_handles h = handles_of(app.external());
  remat_device* wrapped = nullptr;
  REQUIRE(remat_device_wrap(&h, &wrapped) == REMAT_OK);
  const std::vector<float> on_app = three_losses(wrapped);
  remat_device_free(wrapped);

  remat_device* opened = nullptr;
  REQUIRE(remat_device_open("0", &opened) == REMAT_OK);
  remat_device_info info{};
  info.struct_size = sizeof info;
  REQUIRE(remat_device_get_info(0, &info) == REMAT_OK);
  const std::vector<float> on_remat = three_losses(opened);
  remat_device_free(opened);

  INFO("device 0: " << info.name);
  CHECK(std::memcmp(on_app.data(), on_remat.data(), on_app.size() * sizeof(float)) == 0);
  CHECK(app.device_usable());
  app.destroy();
  for (const auto& m : app.messages()) FAIL_CHECK(m);
}

TEST_CASE("wrapping refuses missing handles with a message naming them") {
  remat::test::AppVulkan app;
  remat_vulkan_handles h = handles_of(app.external());
  h.device = nullptr;
  remat_device* d = reinterpret_cast<remat_device*>(0x1);
  CHECK(remat_device_wrap(&h, &d) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(d == nullptr);
  CHECK(std::string(remat_last_error()).find("device") != std::string::npos);
  h = handles_of(app.external());
  h.get_instance_proc_addr = nullptr;
  CHECK(remat_device_wrap(&h, &d) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(!std::string(remat_last_error()).empty());
}

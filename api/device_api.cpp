// remat_device_*: enumerating, opening, wrapping and freeing devices.
#include <memory>
#include <mutex>
#include <string>

#include "api/error_boundary.h"
#include "api/handles.h"
#include "runtime/instance.h"

using remat::capi::guarded;
using remat::capi::invalid;
using remat::capi::require;

namespace {

// Opening a device points volk's process-wide dispatch table at it: one opening at a time.
std::mutex g_open_mutex;

remat_device_type type_of(remat::DeviceKind kind) {
  switch (kind) {
    case remat::DeviceKind::discrete:
      return REMAT_DEVICE_TYPE_DISCRETE;
    case remat::DeviceKind::integrated:
      return REMAT_DEVICE_TYPE_INTEGRATED;
    case remat::DeviceKind::virtual_gpu:
      return REMAT_DEVICE_TYPE_VIRTUAL;
    case remat::DeviceKind::cpu:
      return REMAT_DEVICE_TYPE_CPU;
    case remat::DeviceKind::other:
      break;
  }
  return REMAT_DEVICE_TYPE_OTHER;
}

std::vector<remat::PhysicalDeviceSnapshot> snapshots() {
  const std::lock_guard lock(g_open_mutex);
  return remat::Instance::create(remat::InstanceOptions::from_environment())->snapshots();
}

remat_device* new_handle(std::unique_ptr<remat::Device> device) {
  auto state = std::make_shared<remat::capi::DeviceState>();
  state->device = std::move(device);
  return new remat_device{std::move(state)};
}

}  // namespace

extern "C" {

remat_status remat_device_count(uint32_t* count) {
  return guarded([&] {
    require(count != nullptr, "count is NULL");
    *count = static_cast<uint32_t>(snapshots().size());
  });
}

remat_status remat_device_get_info(uint32_t index, remat_device_info* info) {
  return guarded([&] {
    remat::capi::require_struct(info, "info");
    const auto all = snapshots();
    if (index >= all.size())
      invalid("device index " + std::to_string(index) +
              " is out of range: " + std::to_string(all.size()) + " device(s)");
    const remat::PhysicalDeviceSnapshot& d = all[index];
    *info = remat_device_info{sizeof(remat_device_info)};
    info->index = d.index;
    info->type = type_of(d.kind);
    info->memory_bytes = d.device_local_bytes();
    remat::capi::copy_text(info->name, d.name);
  });
}

remat_status remat_device_open(const char* selector, remat_device** device) {
  return guarded([&] {
    require(device != nullptr, "device (the output pointer) is NULL");
    *device = nullptr;
    const std::lock_guard lock(g_open_mutex);
    *device = new_handle(remat::Device::open(selector ? selector : ""));
  });
}

remat_status remat_device_wrap(const remat_vulkan_handles* handles, remat_device** device) {
  return guarded([&] {
    require(device != nullptr, "device (the output pointer) is NULL");
    *device = nullptr;
    remat::capi::require_struct(handles, "handles");
    invalid("remat_device_wrap: running on an app's own Vulkan device is not supported yet");
  });
}

void remat_device_free(remat_device* device) {
  // Nothing to report: destroying a device cannot fail in a way the app could act on.
  remat::capi::clear_error();
  if (!device) return;
  try {
    const std::lock_guard lock(g_open_mutex);
    delete device;
  } catch (...) {
    // std::mutex::lock may throw std::system_error; the handle is then leaked, not half-freed.
  }
}

}  // extern "C"

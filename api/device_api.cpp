// remat_device_*: enumerating, opening, wrapping and freeing devices.
#include <memory>
#include <stdexcept>
#include <string>

#include "api/error_boundary.h"
#include "api/handles.h"
#include "runtime/vulkan/instance.h"

using remat::capi::guarded;
using remat::capi::invalid;
using remat::capi::require;

namespace {

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
    *device = new_handle(remat::Device::open(selector ? selector : ""));
  });
}

remat_status remat_device_wrap(const remat_vulkan_handles* handles, remat_device** device) {
  return guarded([&] {
    require(device != nullptr, "device (the output pointer) is NULL");
    *device = nullptr;
    remat::capi::require_struct(handles, "handles");
    const remat::ExternalVulkan external{
        reinterpret_cast<PFN_vkGetInstanceProcAddr>(handles->get_instance_proc_addr),
        static_cast<VkInstance>(handles->instance),
        static_cast<VkPhysicalDevice>(handles->physical_device),
        static_cast<VkDevice>(handles->device),
        static_cast<VkQueue>(handles->queue),
        handles->queue_family_index,
    };
    try {
      *device = new_handle(remat::Device::wrap(external));
    } catch (const std::invalid_argument& e) {
      // The library names the fields of its own struct; the app knows them as handles->field.
      std::string message = e.what();
      for (std::size_t at; (at = message.find("ExternalVulkan.")) != std::string::npos;)
        message.replace(at, 15, "handles->");
      invalid(message);
    }
  });
}

void remat_device_free(remat_device* device) {
  remat::capi::clear_error();
  delete device;  // the device itself goes with the last session that holds it
}

}  // extern "C"

// What the C API's opaque handles hold. A session shares ownership of its device, so an app may
// free the device first; one mutex per device serialises every call that submits work to it
// (the library's Device has one fence and one command pool).
#pragma once

#include <memory>
#include <mutex>

#include "remat/remat.h"
#include "runtime/session.h"
#include "runtime/vulkan/device.h"

namespace remat::capi {

struct DeviceState {
  std::unique_ptr<Device> device;
  std::mutex mutex;
};

}  // namespace remat::capi

struct remat_device {
  std::shared_ptr<remat::capi::DeviceState> state;
};

struct remat_session {
  std::shared_ptr<remat::capi::DeviceState> device;
  std::unique_ptr<remat::Session> session;
};

// --device-profile NAME: every command that opens a device or plans acts within a device profile
// (runtime/vulkan/device_profiles.h), given by the flag or else REMAT_DEVICE_PROFILE.
#pragma once

#include <memory>
#include <string>

#include "cli_args.h"
#include "runtime/vulkan/device.h"

namespace remat::cli {

FlagSpec device_profile_flag();
// The profile --device-profile names, else REMAT_DEVICE_PROFILE; "" for none. An unknown name is
// a UsageError listing the known ones.
std::string device_profile_arg(const Args& args);
// The device chosen as usual (REMAT_DEVICE), acting within `profile` ("" for none).
std::unique_ptr<Device> open_device(const std::string& profile);

}  // namespace remat::cli

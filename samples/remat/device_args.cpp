#include "device_args.h"

#include <cstdlib>

#include "runtime/vulkan/device_profiles.h"

namespace remat::cli {

FlagSpec device_profile_flag() {
  return {"--device-profile", "NAME",
          "act within a real GPU's Vulkan limits and features (remat devices --profiles): " +
              device_profile_names(),
          "REMAT_DEVICE_PROFILE, else none"};
}

std::string device_profile_arg(const Args& args) {
  std::string name;
  if (auto flag = args.get("--device-profile"))
    name = *flag;
  else if (const char* env = std::getenv("REMAT_DEVICE_PROFILE"))
    name = env;
  if (!name.empty() && !find_device_profile(name))
    throw UsageError("unknown device profile '" + name +
                     "'; known profiles: " + device_profile_names());
  return name;
}

std::unique_ptr<Device> open_device(const std::string& profile) {
  InstanceOptions options = InstanceOptions::from_environment();
  options.device_profile = profile;
  return Device::open({}, options);
}

}  // namespace remat::cli

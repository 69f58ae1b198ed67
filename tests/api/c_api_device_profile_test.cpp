// The C API under REMAT_DEVICE_PROFILE: devices are seen within the profile's limits, and an
// unknown profile is an invalid-argument status naming the known ones.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "remat/remat.h"
#include "tests/api/check_error.h"

using remat::test::check_error;

namespace {

// Sets REMAT_DEVICE_PROFILE for one test and removes it after.
struct ProfileEnv {
  explicit ProfileEnv(const char* name) { setenv("REMAT_DEVICE_PROFILE", name, 1); }
  ~ProfileEnv() { unsetenv("REMAT_DEVICE_PROFILE"); }
};

}  // namespace

TEST_CASE("REMAT_DEVICE_PROFILE makes the C API see devices within the profile") {
  const ProfileEnv env("adreno-540");
  remat_device_info info{sizeof(remat_device_info)};
  REQUIRE(remat_device_get_info(0, &info) == REMAT_OK);
  CHECK(std::string(info.name).find(" as adreno-540") != std::string::npos);
  remat_device* device = nullptr;
  REQUIRE(remat_device_open(nullptr, &device) == REMAT_OK);
  remat_device_free(device);
}

TEST_CASE("an unknown REMAT_DEVICE_PROFILE is an invalid argument naming the known profiles") {
  const ProfileEnv env("mali-g99");
  remat_device* device = nullptr;
  check_error(remat_device_open(nullptr, &device), REMAT_ERROR_INVALID_ARGUMENT,
              "unknown device profile 'mali-g99'; known profiles: mali-g78, ");
  CHECK(device == nullptr);
  uint32_t count = 0;
  check_error(remat_device_count(&count), REMAT_ERROR_INVALID_ARGUMENT, "mali-g99");
}

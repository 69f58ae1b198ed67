#include "api/error_boundary.h"

#include <filesystem>
#include <new>
#include <string>

#include "base/progress.h"
#include "runtime/vulkan/error.h"

namespace remat::capi {

namespace {

thread_local std::string t_last_error;
// When even the message cannot be stored, this one is returned.
thread_local bool t_message_lost = false;

remat_status device_status(const VulkanError& e) {
  const VkResult r = e.result();
  return r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
             ? REMAT_ERROR_OUT_OF_MEMORY
             : REMAT_ERROR_DEVICE;
}

}  // namespace

void invalid(const std::string& message) {
  throw ApiError(REMAT_ERROR_INVALID_ARGUMENT, message);
}

void require(bool ok, const char* message) {
  if (!ok) invalid(message);
}

void require_range(bool ok, const char* field, double value, const char* range) {
  if (!ok)
    invalid(std::string("params->") + field + " is " + std::to_string(value) + "; it must be " +
            range);
}

void clear_error() noexcept {
  t_last_error.clear();
  t_message_lost = false;
}

remat_status fail(remat_status status, const char* message) noexcept {
  try {
    t_last_error = message;
    t_message_lost = false;
  } catch (...) {
    t_message_lost = true;
  }
  return status;
}

remat_status status_from_current_exception() noexcept {
  try {
    throw;
  } catch (const ApiError& e) {
    return fail(e.status(), e.what());
  } catch (const Cancelled& e) {
    return fail(REMAT_ERROR_CANCELLED, e.what());
  } catch (const std::bad_alloc&) {
    return fail(REMAT_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const VulkanError& e) {
    return fail(device_status(e), e.what());
  } catch (const std::invalid_argument& e) {
    return fail(REMAT_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    return fail(REMAT_ERROR_IO, e.what());
  } catch (const std::exception& e) {
    return fail(REMAT_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(REMAT_ERROR_INTERNAL, "an unknown exception reached the C API");
  }
}

}  // namespace remat::capi

extern "C" {

const char* remat_last_error(void) {
  using namespace remat::capi;
  return t_message_lost ? "out of host memory (the error message could not be stored)"
                        : t_last_error.c_str();
}

const char* remat_status_name(remat_status status) {
  switch (status) {
    case REMAT_OK:
      return "REMAT_OK";
    case REMAT_ERROR_INVALID_ARGUMENT:
      return "REMAT_ERROR_INVALID_ARGUMENT";
    case REMAT_ERROR_OUT_OF_MEMORY:
      return "REMAT_ERROR_OUT_OF_MEMORY";
    case REMAT_ERROR_DEVICE:
      return "REMAT_ERROR_DEVICE";
    case REMAT_ERROR_IO:
      return "REMAT_ERROR_IO";
    case REMAT_ERROR_CANCELLED:
      return "REMAT_ERROR_CANCELLED";
    case REMAT_ERROR_INTERNAL:
      return "REMAT_ERROR_INTERNAL";
  }
  return "unknown status";
}

uint32_t remat_version(void) {
  return REMAT_VERSION;
}

}  // extern "C"

#include "tests/support/test_device.h"

#include <memory>

namespace remat::test {

namespace {
std::unique_ptr<Device>& device_slot() {
  static std::unique_ptr<Device> d;
  return d;
}
std::unique_ptr<KernelCache>& kernels_slot() {
  static std::unique_ptr<KernelCache> k;
  return k;
}
}  // namespace

Device& device() {
  auto& d = device_slot();
  if (!d) d = Device::open({}, InstanceOptions{.validation = true});
  return *d;
}

KernelCache& kernels() {
  auto& k = kernels_slot();
  if (!k) k = std::make_unique<KernelCache>(device());
  return *k;
}

std::size_t validation_message_count() {
  auto& d = device_slot();
  return d ? d->instance().validation_message_count() : 0;
}

void run_once(std::vector<Dispatch> dispatches) {
  Executor ex(kernels(), std::move(dispatches));
  ex.run();
}

void shutdown() {
  kernels_slot().reset();
  device_slot().reset();
}

}  // namespace remat::test

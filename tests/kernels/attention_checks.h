// What the attention tests share: the kernel variants DeviceQuirks selects, and the error
// criterion the flash-style kernels are held to against the naive reference.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/vulkan/device_plan.h"
#include "tests/support/test_device.h"

namespace remat::test {

// The builders pick workgroup sizes and the texel-fetch kernels from DeviceQuirks; every variant
// runs on any device, so the tests run each one here: CPU and GPU workgroups reading storage
// buffers, and CPU workgroups reading texel views.
inline std::vector<DeviceQuirks> attention_variants() {
  DeviceQuirks cpu = device().plan().quirks, gpu = cpu;
  cpu.barriers_are_expensive = true;
  cpu.max_loop_iterations = 65535;  // llvmpipe's limit
  gpu.barriers_are_expensive = false;
  gpu.max_loop_iterations = 0;
  cpu.texel_fetch_beats_storage_loads = gpu.texel_fetch_beats_storage_loads = false;
  DeviceQuirks texels = cpu;
  texels.texel_fetch_beats_storage_loads = true;
  return {cpu, gpu, texels};
}

inline double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::abs(x)));
  return m;
}

// |gpu − ref| ≤ tol·(|ref| + magnitude[i]); returns the largest ratio error / (|ref| + mag) seen.
inline double require_close_to(const std::vector<float>& gpu, const std::vector<float>& ref,
                               const std::vector<double>& magnitude, double tol, const char* what) {
  REQUIRE(gpu.size() == ref.size());
  double worst = 0;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    const double bound = std::abs(double(ref[i])) + magnitude[i];
    const double err = std::abs(double(gpu[i]) - double(ref[i]));
    worst = std::max(worst, err / bound);
    if (err <= tol * bound) continue;  // REQUIRE only on failure
    INFO(what << "[" << i << "] gpu " << gpu[i] << " ref " << ref[i] << " bound " << bound);
    REQUIRE(err <= tol * bound);
  }
  return worst;
}

}  // namespace remat::test

#include "runtime/kernels/matmul.h"

#include "push_constants.h"

namespace remat::kernels {

Dispatch matmul_forward(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice inp,
                        BufferSlice w, BufferSlice bias, BufferSlice out) {
  // Register tiles: TM x TN outputs per invocation. Workgroup 16 x 4 invocations.
  (void)quirks;
  constexpr uint32_t kTM = 4, kTN = 4, kWX = 16, kWY = 4;
  Dispatch d;
  d.kernel = KernelId::matmul_forward;
  d.spec = {kWX, kWY, 1, kTM, kTN};
  const bool has_bias = bias.buffer != VK_NULL_HANDLE;
  d.bindings = {{inp, false}, {w, false}, {has_bias ? bias : w, false}, {out, true}};
  d.push = push_bytes(push::MatmulParams{s.M, s.N, s.K, static_cast<uint32_t>(s.layout), has_bias ? 1u : 0u});
  d.groups = {div_up(s.N, kWX * kTN), div_up(s.M, kWY * kTM), 1};
  d.label = "matmul_forward";
  return d;
}

}  // namespace remat::kernels

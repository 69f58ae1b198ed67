#include "runtime/kernels/matmul.h"

#include "push_constants.h"

namespace remat::kernels {

Dispatch matmul_forward(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice inp,
                        BufferSlice w, BufferSlice bias, BufferSlice out) {
  // A workgroup covers TM rows x (WX * TN) columns. CPU drivers vectorise across 8 invocations
  // and pay per lane for non-uniform loads, so they get tall tiles (more uniform A loads per
  // W load); GPUs get a wider workgroup.
  const uint32_t tm = quirks.barriers_are_expensive ? 8 : 4;
  const uint32_t tn = quirks.barriers_are_expensive ? 4 : 2;
  const uint32_t wx = quirks.barriers_are_expensive ? 8 : 64;
  Dispatch d;
  d.kernel = KernelId::matmul_forward;
  d.spec = {wx, 1, 1, tm, tn};
  const bool has_bias = bias.buffer != VK_NULL_HANDLE;
  d.bindings = {{inp, false}, {w, false}, {has_bias ? bias : w, false}, {out, true}};
  d.push = push_bytes(push::MatmulParams{s.M, s.N, s.K, static_cast<uint32_t>(s.layout), has_bias ? 1u : 0u});
  d.groups = {div_up(s.N, wx * tn), div_up(s.M, tm), 1};
  d.label = "matmul_forward";
  return d;
}

}  // namespace remat::kernels

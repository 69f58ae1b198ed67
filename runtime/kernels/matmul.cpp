#include "runtime/kernels/matmul.h"

#include "push_constants.h"

namespace remat::kernels {

Dispatch matmul_forward(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice inp,
                        BufferSlice w, BufferSlice bias, BufferSlice out) {
  const bool has_bias = bias.buffer != VK_NULL_HANDLE;
  Dispatch d;
  d.bindings = {{inp, false}, {w, false}, {has_bias ? bias : w, false}, {out, true}};
  d.push = push_bytes(push::MatmulParams{s.M, s.N, s.K, static_cast<uint32_t>(s.layout), has_bias ? 1u : 0u});
  d.label = "matmul_forward";
  if (quirks.barriers_are_expensive && s.layout == WeightLayout::in_out && s.N % 4 == 0) {
    // CPU drivers: four contiguous columns per vec4 load (see matmul_forward_vec4.comp).
    // 8 rows x 8 columns per invocation measured fastest on llvmpipe at 256^3 and 1024^3.
    const uint32_t tm = 8, tn4 = 2, wx = 8;
    d.kernel = KernelId::matmul_forward_vec4;
    d.spec = {wx, 1, 1, tm, tn4};
    d.groups = {div_up(s.N / 4, wx * tn4), div_up(s.M, tm), 1};
    return d;
  }
  // A workgroup covers TM rows x (WX * TN) columns. CPU drivers vectorise across 8 invocations
  // and pay per lane for non-uniform loads, so they get tall tiles (more uniform A loads per
  // W load); GPUs get a wider workgroup.
  const uint32_t tm = quirks.barriers_are_expensive ? 8 : 4;
  const uint32_t tn = quirks.barriers_are_expensive ? 4 : 2;
  const uint32_t wx = quirks.barriers_are_expensive ? 8 : 64;
  d.kernel = KernelId::matmul_forward;
  d.spec = {wx, 1, 1, tm, tn};
  d.groups = {div_up(s.N, wx * tn), div_up(s.M, tm), 1};
  return d;
}

}  // namespace remat::kernels

#include "runtime/kernels/gdn_gates.h"

#include <algorithm>

#include "gdn_gates_params.h"

namespace remat::kernels {

Dispatch gdn_gates_forward(const GdnGatesShape& s, BufferSlice a, BufferSlice b, BufferSlice a_log,
                           BufferSlice dt_bias, BufferSlice g, BufferSlice beta) {
  constexpr uint32_t kGroup = 256;
  Dispatch d;
  d.kernel = KernelId::gdn_gates_forward;
  d.spec = {kGroup};
  d.bindings = {{a, false}, {b, false}, {a_log, false}, {dt_bias, false}, {g, true}, {beta, true}};
  d.push = push_bytes(push::GdnGatesParams{s.tokens, s.heads, 0, 0, 0});
  d.groups = {grid_stride_groups(uint64_t(s.tokens) * s.heads, kGroup), 1, 1};
  d.label = "gdn_gates_forward";
  return d;
}

Dispatch gdn_gates_backward(const GdnGatesShape& s, BufferSlice dg, BufferSlice dbeta,
                            BufferSlice a, BufferSlice b, BufferSlice a_log, BufferSlice dt_bias,
                            const GdnGatesGrads& out) {
  Dispatch d;
  d.kernel = KernelId::gdn_gates_backward;
  // A constant of the kernel, never a device choice: it decides the summation order.
  d.spec = {GDN_GATES_GROUP};
  // Frozen parameters: the shader writes neither gradient (mode 2), and their bindings, which
  // Vulkan still needs, are A_log and dt_bias themselves, never written there.
  const bool frozen = out.da_log.buffer == VK_NULL_HANDLE;
  d.bindings = {{dg, false},
                {dbeta, false},
                {a, false},
                {b, false},
                {a_log, false},
                {dt_bias, false},
                {out.da, true},
                {out.db, true},
                {frozen ? a_log : out.da_log, !frozen},
                {frozen ? dt_bias : out.ddt_bias, !frozen}};
  d.push = push_bytes(push::GdnGatesParams{s.tokens, s.heads, static_cast<uint32_t>(out.da_mode),
                                           static_cast<uint32_t>(out.db_mode),
                                           frozen ? 2u : static_cast<uint32_t>(out.params_mode)});
  d.groups = {std::clamp<uint32_t>(s.heads, 1, 65535), 1, 1};
  d.label = "gdn_gates_backward";
  return d;
}

}  // namespace remat::kernels

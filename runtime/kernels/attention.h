// Dispatches for causal multi-head attention (GPT-2's fused c_attn layout, docs/ops.md).
#pragma once

#include "runtime/device_plan.h"
#include "runtime/executor.h"
#include "runtime/kernels/grad_write.h"

namespace remat::kernels {

struct AttentionShape {
  uint32_t B = 0, T = 0, C = 0, NH = 0;  // batch, sequence, channels, heads (C % NH == 0)
};

// Largest head size the kernels accept: each invocation holds up to four head-sized rows.
// Head sizes must also be multiples of 4 (rows are read as vec4s).
constexpr uint32_t kMaxAttentionHeadSize = 256;

// qkv[B,T,3C] -> out[B,T,C], lse[B,NH,T] (log-sum-exp of each row's scaled scores).
// Throws std::invalid_argument for C % NH != 0, a head size that is not a multiple of 4 or above
// kMaxAttentionHeadSize, or (on CPU drivers, see attention.cpp) a T too long for the driver.
Dispatch attention_forward(const DeviceQuirks& quirks, const AttentionShape& s, BufferSlice qkv,
                           BufferSlice out, BufferSlice lse);

// dout[B,T,C], qkv, out, lse -> dqkv[B,T,3C] (overwritten or accumulated onto). One dispatch:
// dq and dk/dv are computed by separate invocations that write disjoint elements.
Dispatch attention_backward(const DeviceQuirks& quirks, const AttentionShape& s, BufferSlice dout,
                            BufferSlice qkv, BufferSlice out, BufferSlice lse, BufferSlice dqkv,
                            GradWrite mode);

}  // namespace remat::kernels

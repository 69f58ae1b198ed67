// Dispatches for causal attention: multi-head on GPT-2's fused c_attn layout (docs/ops.md), and
// grouped-query on separate q, k and v tensors (the Llama family). Both run the same kernels
// (shaders/attention_*_body.glsl), which read each operand's heads at a row stride and column
// offset; GPT-2's fused qkv is one buffer bound as q, k and v at offsets 0, C and 2C.
#pragma once

#include "runtime/kernels/act_variant.h"
#include "runtime/kernels/grad_write.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

// C = NH * D, the query width (D, the head size, is C / NH). KV: key/value heads, dividing NH
// (grouped-query attention; 1 is multi-query); 0 means NH (multi-head attention).
// attention_forward/backward (GPT-2's fused qkv) accept only KV == 0 or NH.
// window: sliding-window attention, query t sees keys t - window + 1 .. t (transformers'
// sliding_window: window keys, itself included); 0 (or window >= T) sees keys 0 .. t. The kernels
// skip the key blocks outside the window, so a window shorter than T costs less time.
// scale: the score scale, scores = scale q.k; 0 means 1/sqrt(D) (Gemma 3 sets
// query_pre_attn_scalar^-0.5).
struct AttentionShape {
  uint32_t B = 0, T = 0, C = 0, NH = 0;
  uint32_t KV = 0;
  uint32_t window = 0;
  float scale = 0.0f;
};

// Largest head size the kernels accept: each invocation holds up to four head-sized rows.
// Head sizes must also be multiples of 4 (rows are read as vec4s).
constexpr uint32_t kMaxAttentionHeadSize = 256;

// Every function takes packed rows' `positions` [B,T] u32 last (shaders/attention_params.h): with
// them attention is block-diagonal, each token seeing only the earlier tokens of its own example,
// and the key blocks of other examples are skipped; without (an empty slice) it is plain causal.
//
// qkv[B,T,3C] -> out[B,T,C], lse[B,NH,T] (log-sum-exp of each row's scaled scores).
// Throws std::invalid_argument for C % NH != 0, a head size that is not a multiple of 4 or above
// kMaxAttentionHeadSize, KV != NH, or (on CPU drivers, see attention.cpp) a T too long for the
// driver.
Dispatch attention_forward(const DeviceQuirks& quirks, const AttentionShape& s, BufferSlice qkv,
                           BufferSlice out, BufferSlice lse, DType act = DType::f32,
                           BufferSlice positions = {});

// dout[B,T,C], qkv, out, lse -> dqkv[B,T,3C] (overwritten or accumulated onto). One dispatch:
// dq and dk/dv are computed by separate invocations that write disjoint elements.
Dispatch attention_backward(const DeviceQuirks& quirks, const AttentionShape& s, BufferSlice dout,
                            BufferSlice qkv, BufferSlice out, BufferSlice lse, BufferSlice dqkv,
                            GradWrite mode, DType act = DType::f32, BufferSlice positions = {});

// Grouped-query attention, causal (within the shape's window), scale 1/sqrt(D) unless the shape
// names another, positions 0..T-1: query head h attends with
// key/value head h / (NH / KV) (Hugging Face's repeat_kv).
// q [B,T,NH*D], k and v [B,T,KV*D] (compact, separate tensors) -> out [B,T,NH*D], lse [B,NH,T].
// Throws std::invalid_argument as attention_forward does, and for KV not dividing NH.
Dispatch gqa_attention_forward(const DeviceQuirks& quirks, const AttentionShape& s, BufferSlice q,
                               BufferSlice k, BufferSlice v, BufferSlice out, BufferSlice lse,
                               DType act = DType::f32, BufferSlice positions = {});

// dout, q, k, v, out, lse -> dq [B,T,NH*D], dk, dv [B,T,KV*D], each overwritten or added to
// (mode). dk and dv sum over the query heads of their group inside one invocation, in ascending
// head order: deterministic, no atomics. On CPU drivers the T limit shrinks with the group size
// NH / KV (each dk/dv invocation loops over the whole group).
Dispatch gqa_attention_backward(const DeviceQuirks& quirks, const AttentionShape& s,
                                BufferSlice dout, BufferSlice q, BufferSlice k, BufferSlice v,
                                BufferSlice out, BufferSlice lse, BufferSlice dq, BufferSlice dk,
                                BufferSlice dv, GradWrite mode, DType act = DType::f32,
                                BufferSlice positions = {});

}  // namespace remat::kernels

// Dispatches for the gated delta rule: Gated DeltaNet's recurrence (Yang, Kautz, Hatamizadeh,
// "Gated Delta Networks: Improving Mamba2 with Delta Rule", 2024), the linear
// attention of three in four Qwen3.5 layers, step by step. The graph runs the chunkwise form
// (gated_delta_rule_wy.h, same interface and semantics); these remain as its benchmarks' peer.
//
// Per row and value head h, reading key head h / (Hv / Hk) (consecutive value heads share a key
// head: transformers' repeat_interleave over the Hugging Face weights' head order), the state
// S [dk, dv] runs
//   S = 0 where positions[row, t] == 0 (packed rows restart the state at each example)
//   S = exp(g_t) S;  S += beta_t k_t (v_t - S^T k_t)^T;  o_t = S^T q_t
// This is transformers' torch_recurrent_gated_delta_rule (qwen3_next) with q and k already
// L2-normalised and q already scaled by 1/sqrt(dk): that function always scales q itself, and
// normalises q and k (eps 1e-6) when use_qk_l2norm_in_kernel. It is also ggml's CPU
// gated_delta_net (ops.cpp) with its output scale 1/sqrt(dk) moved onto q; ggml tiles key heads
// over value heads (llama.cpp's converter reorders the value heads to match).
//
// Every call runs the steps [t0, t1) from the state before t0 and returns the state after t1 - 1,
// so a sequence can be run in chunks whose boundary states a planner keeps or recomputes:
// forward(chunk, S_in) -> (o, S_out), backward(chunk, S_in, do, dS_out) -> (dq, dk, dv, dg,
// dbeta, dS_in). Tensors are the whole [rows, T, ...] ones; only the range's steps are read and
// written. Chunked runs give the bits of one whole-range run (tests/kernels/
// gated_delta_rule_test.cpp): a step's arithmetic is the same wherever it runs, and the sums over
// columns and heads are per step in a fixed order (no atomics). Gradients are overwritten.
//
// Layouts (fp32): q, k [rows, T, Hk, dk]; v, o [rows, T, Hv, dv]; g, beta [rows, T, Hv];
// states [rows, Hv, dk, dv]; positions [rows, T] u32. dk, dv <= 256; Hv a multiple of Hk.
// v may be read in place from a wider tensor (Qwen3.5's conv output [rows, T, 2 key_dim +
// value_dim], v at 2 key_dim): token (r, t)'s Hv * dv floats start at (r T + t) v_stride +
// v_offset. dv is written at v's places only; the rest of that tensor is not touched.
#pragma once

#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

struct GatedDeltaRuleShape {
  uint32_t rows = 1, T = 1, Hk = 1, Hv = 1, dk = 1, dv = 1;
  uint32_t t0 = 0, t1 = 0;  // the steps this call runs; t1 0 means T
  uint32_t v_stride = 0;    // floats from one token of v (and dv) to the next; 0: Hv * dv, dense
  uint32_t v_offset = 0;    // floats before token 0's first value head
};

struct GatedDeltaRuleInputs {
  BufferSlice q, k, v, g, beta;
  BufferSlice positions;  // empty: one example per row
};

struct GatedDeltaRuleGrads {
  BufferSlice dq, dk, dv, dg, dbeta;
  BufferSlice ds_in;  // empty: not written
};

// The backward's scratch, in two buffers (each a binding of its own): the states it recomputes
// from S_in, [rows, Hv, subs + sub, dk, dv], and the partial sums it reduces, [rows, Hv, blocks,
// L, 2 dk] then [rows, Hv, L, dv, 2], L = t1 - t0. Bytes exactly as the kernels use them.
struct GatedDeltaRuleWorkspace {
  uint64_t state_bytes = 0;
  uint64_t partial_bytes = 0;
};
GatedDeltaRuleWorkspace gated_delta_rule_backward_workspace(const GatedDeltaRuleShape& s);

// The most steps one forward or backward call may run on this device: llvmpipe stops an
// invocation's loops after quirks.max_loop_iterations in total. 0: no limit. Longer ranges throw
// std::invalid_argument; split them into chunks.
uint32_t gated_delta_rule_max_forward_steps(const DeviceQuirks& quirks);
uint32_t gated_delta_rule_max_backward_steps(const DeviceQuirks& quirks);

// The elements per unrolled block of the head loops the forward (or backward) dispatch of `s`
// uses: dk on GPUs (every head loop unrolled), a divisor of dk on CPU drivers, whose compilers take
// minutes over the unrolled dk-128 kernels, unless the range is too long for the blocks under
// llvmpipe's loop limit. The same bits either way.
uint32_t gated_delta_rule_head_unroll(const DeviceQuirks& quirks, const GatedDeltaRuleShape& s,
                                      bool backward);

// Bindings 0-6 of every gated delta rule kernel, sequential and chunkwise (q, k, v, g, beta,
// positions, s_in); an absent input binds q, which the kernel then never reads.
std::vector<Binding> gated_delta_rule_input_bindings(const GatedDeltaRuleInputs& in,
                                                     BufferSlice s_in);

// o over [t0, t1) (empty: not written, the recurrence run for s_out alone) and s_out (empty: not
// written, for o alone) from s_in (empty: zero). s_in and s_out may be the same slice.
Dispatch gated_delta_rule_forward(const DeviceQuirks& quirks, const GatedDeltaRuleShape& s,
                                  const GatedDeltaRuleInputs& in, BufferSlice s_in, BufferSlice o,
                                  BufferSlice s_out);

// Every gradient over [t0, t1) from d_o and ds_out (empty: zero), recomputing the range's states
// from s_in (empty: zero). Two dispatches: the per-column pass, then the fixed-order reduction.
std::vector<Dispatch> gated_delta_rule_backward(
    const DeviceQuirks& quirks, const GatedDeltaRuleShape& s, const GatedDeltaRuleInputs& in,
    BufferSlice s_in, BufferSlice d_o, BufferSlice ds_out, const GatedDeltaRuleGrads& grads,
    BufferSlice state_workspace, BufferSlice partial_workspace);

}  // namespace remat::kernels

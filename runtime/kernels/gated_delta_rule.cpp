#include "runtime/kernels/gated_delta_rule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "gated_delta_rule_params.h"
#include "graph/delta_rule_workspace.h"

namespace remat::kernels {

namespace {

constexpr uint32_t kMaxHead = 256;
// Forward columns per workgroup: no barriers, so any size; 64 fills a wave and 8 lavapipe lanes.
constexpr uint32_t kForwardGroup = 64;
constexpr uint32_t kReduceGroup = 64;
// Loop iterations outside the time loops (the backward's per-sub-range loops, counted per step).
constexpr uint32_t kLoopSlack = 64;
// Elements per unrolled block of the head loops on CPU drivers (the *_blocks kernels): at dk 128
// the pipelines compile about ten times faster than unrolled on Mesa 22.3 and run as fast; blocks
// of 16 ran slower (docs/ops.md).
constexpr uint32_t kCpuUnroll = 8;

uint32_t range_end(const GatedDeltaRuleShape& s) {
  return s.t1 == 0 ? s.T : s.t1;
}

uint32_t v_stride(const GatedDeltaRuleShape& s) {
  return s.v_stride == 0 ? s.Hv * s.dv : s.v_stride;
}

void check(const DeviceQuirks& quirks, const GatedDeltaRuleShape& s, uint32_t max_steps,
           const char* what) {
  const uint32_t t1 = range_end(s);
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(std::string("gated delta rule ") + what + ": " + why);
  };
  if (s.rows == 0 || s.T == 0 || s.Hk == 0 || s.Hv == 0 || s.dk == 0 || s.dv == 0)
    fail("every dimension must be at least 1");
  if (s.dk > kMaxHead || s.dv > kMaxHead) fail("head sizes above 256 are not supported");
  if (s.Hv % s.Hk != 0) fail("value heads must be a multiple of key heads");
  if (s.t0 >= t1 || t1 > s.T) fail("the step range must be non-empty and within T");
  if (uint64_t(s.v_offset) + uint64_t(s.Hv) * s.dv > v_stride(s))
    fail("v's heads (offset " + std::to_string(s.v_offset) + " + " + std::to_string(s.Hv) + " x " +
         std::to_string(s.dv) + ") must fit in its token stride " + std::to_string(v_stride(s)));
  if (max_steps != 0 && t1 - s.t0 > max_steps)
    fail(std::to_string(t1 - s.t0) + " steps in one call, but this device runs at most " +
         std::to_string(max_steps) + " (" + std::to_string(quirks.max_loop_iterations) +
         " loop iterations per invocation): split the range");
}

push::GatedDeltaRuleParams params(const GatedDeltaRuleShape& s, bool has_s_in, bool has_positions,
                                  bool has_o, bool has_s_out = true) {
  return {s.rows,
          s.T,
          s.Hk,
          s.Hv,
          s.dv,
          s.t0,
          range_end(s),
          has_s_in ? 1u : 0u,
          has_positions ? 1u : 0u,
          v_stride(s),
          s.v_offset,
          has_o ? 1u : 0u,
          has_s_out ? 1u : 0u};
}

bool given(BufferSlice b) {
  return b.buffer != VK_NULL_HANDLE;
}

// The backward's workgroup memory holds ceil(2 dk / 4) vec4s per column in 1024 (16 KiB, within
// every device profile's limit), up to 64 columns (graph/delta_rule_workspace.h).
uint32_t backward_columns(const GatedDeltaRuleShape& s) {
  return static_cast<uint32_t>(delta_rule_backward_columns(s.dk, s.dv));
}

// Sub-ranges of about sqrt(L) steps: the state workspace holds one state per sub-range plus one
// sub-range's states, sqrt(L) + sqrt(L) in all rather than L.
uint32_t sub_steps(const GatedDeltaRuleShape& s) {
  return static_cast<uint32_t>(delta_rule_sub_steps(range_end(s) - s.t0));
}

// The head loops' blocks: the largest divisor of dk up to kCpuUnroll.
uint32_t cpu_unroll(uint32_t dk) {
  uint32_t u = std::min(dk, kCpuUnroll);
  while (dk % u != 0) --u;
  return u;
}

// Loop iterations one invocation of the *_blocks kernels runs, nb = dk / unroll blocks per head
// loop (as gated_delta_rule_{forward,backward}_body.glsl count them). llvmpipe runs its lanes in
// lockstep, masked: it counts a loop of n iterations as n + 1 (the iteration that breaks out
// still reaches the loop's end, where the count is taken), and a loop in the branch of an if/else
// not taken as 1. Forward: s_in, s_out and the first step's start, the time loop, and per step
// the head loop of each branch. Backward: six head loops outside the steps and the sub-range
// loop; per sub-range three head loops and the time loops' ends; per step three time loops, one
// head loop in each forward pass and two walking back, and the walk's branch not taken. The
// tests run both at the longest range these counts allow.
uint64_t blocks_iterations(const GatedDeltaRuleShape& s, uint32_t nb, bool backward) {
  const uint64_t L = range_end(s) - s.t0, loop = uint64_t(nb) + 1;
  if (!backward) return 3 * loop + (L + 1) + L * (loop + 1);
  const uint64_t subs = div_up(L, sub_steps(s));
  return 6 * loop + 1 + subs * (3 * loop + 4) + L * (4 + 4 * loop);
}

// Elements per block of the head loops: dk (fully unrolled, the state in registers) on GPUs, and
// on CPU drivers too when a range is too long for the blocks under llvmpipe's loop limit.
uint32_t head_unroll(const DeviceQuirks& quirks, const GatedDeltaRuleShape& s, bool backward) {
  if (!quirks.barriers_are_expensive) return s.dk;
  const uint32_t u = cpu_unroll(s.dk);
  if (quirks.max_loop_iterations == 0) return u;
  const uint64_t n = blocks_iterations(s, s.dk / u, backward) + kLoopSlack;
  return n <= quirks.max_loop_iterations ? u : s.dk;
}

// The kernel and its specialization: workgroup x, then dk, then the blocks' unroll.
void select_kernel(Dispatch& d, const DeviceQuirks& quirks, const GatedDeltaRuleShape& s,
                   uint32_t group, bool backward) {
  const uint32_t u = head_unroll(quirks, s, backward);
  if (u == s.dk) {
    d.kernel = backward ? KernelId::gated_delta_rule_backward : KernelId::gated_delta_rule_forward;
    d.spec = {group, 1, 1, s.dk};
  } else {
    d.kernel = backward ? KernelId::gated_delta_rule_backward_blocks
                        : KernelId::gated_delta_rule_forward_blocks;
    d.spec = {group, 1, 1, s.dk, u};
  }
}

}  // namespace

uint32_t gated_delta_rule_head_unroll(const DeviceQuirks& quirks, const GatedDeltaRuleShape& s,
                                      bool backward) {
  return head_unroll(quirks, s, backward);
}

uint32_t gated_delta_rule_max_forward_steps(const DeviceQuirks& quirks) {
  return quirks.max_loop_iterations == 0 ? 0 : quirks.max_loop_iterations - kLoopSlack;
}

// The backward's time loops run each step three times (states, recompute, walk back), and each
// sub-range's two loops start once more: 3 L + 2 sqrt(L) <= 4 L.
uint32_t gated_delta_rule_max_backward_steps(const DeviceQuirks& quirks) {
  return quirks.max_loop_iterations == 0 ? 0 : (quirks.max_loop_iterations - kLoopSlack) / 4;
}

GatedDeltaRuleWorkspace gated_delta_rule_backward_workspace(const GatedDeltaRuleShape& s) {
  const DeltaRuleKernelScratch k =
      delta_rule_kernel_scratch({s.rows, s.Hv, s.dk, s.dv, range_end(s) - s.t0});
  return {k.state_bytes, k.partial_bytes};
}

Dispatch gated_delta_rule_forward(const DeviceQuirks& quirks, const GatedDeltaRuleShape& s,
                                  const GatedDeltaRuleInputs& in, BufferSlice s_in, BufferSlice o,
                                  BufferSlice s_out) {
  check(quirks, s, gated_delta_rule_max_forward_steps(quirks), "forward");
  const uint32_t group = std::min(kForwardGroup, s.dv);
  Dispatch d;
  select_kernel(d, quirks, s, group, false);
  d.bindings = gated_delta_rule_input_bindings(in, s_in);
  if (!given(o) && !given(s_out))
    throw std::invalid_argument("gated delta rule forward: neither o nor s_out to write");
  // Without o its binding repeats s_out, never written through it; without s_out, o.
  d.bindings.push_back({given(o) ? o : s_out, true});
  d.bindings.push_back({given(s_out) ? s_out : o, true});
  d.push = push_bytes(params(s, given(s_in), given(in.positions), given(o), given(s_out)));
  d.groups = {div_up(s.dv, group), s.Hv, s.rows};
  d.label = "gated_delta_rule_forward";
  return d;
}

std::vector<Dispatch> gated_delta_rule_backward(
    const DeviceQuirks& quirks, const GatedDeltaRuleShape& s, const GatedDeltaRuleInputs& in,
    BufferSlice s_in, BufferSlice d_o, BufferSlice ds_out, const GatedDeltaRuleGrads& grads,
    BufferSlice state_workspace, BufferSlice partial_workspace) {
  check(quirks, s, gated_delta_rule_max_backward_steps(quirks), "backward");
  const uint32_t L = range_end(s) - s.t0, sub = sub_steps(s), columns = backward_columns(s);
  const uint32_t blocks = div_up(s.dv, columns);

  Dispatch d;
  select_kernel(d, quirks, s, columns, true);
  d.bindings = gated_delta_rule_input_bindings(in, s_in);
  d.bindings.push_back({d_o, false});
  d.bindings.push_back({given(ds_out) ? ds_out : in.q, false});
  d.bindings.push_back({grads.dv, true});
  // Without dS_in its binding repeats dv, never written through it.
  d.bindings.push_back({given(grads.ds_in) ? grads.ds_in : grads.dv, true});
  d.bindings.push_back({state_workspace, true});
  d.bindings.push_back({partial_workspace, true});
  d.push = push_bytes(push::GatedDeltaRuleBackwardParams{
      params(s, given(s_in), given(in.positions), true), given(ds_out) ? 1u : 0u,
      given(grads.ds_in) ? 1u : 0u, sub, div_up(L, sub), blocks});
  d.groups = {blocks, s.Hv, s.rows};
  d.label = "gated_delta_rule_backward";

  Dispatch r;
  r.kernel = KernelId::gated_delta_rule_reduce;
  r.spec = {kReduceGroup};
  r.bindings = {{partial_workspace, false},
                {grads.dq, true},
                {grads.dk, true},
                {grads.dg, true},
                {grads.dbeta, true}};
  r.push = push_bytes(push::GatedDeltaRuleReduceParams{s.rows, s.T, s.Hk, s.Hv, s.dk, s.dv, s.t0,
                                                       range_end(s), blocks});
  const uint64_t items = uint64_t(s.rows) * L * (uint64_t(s.Hk) * s.dk + s.Hv);
  r.groups = {grid_stride_groups(items, kReduceGroup), 1, 1};
  r.label = "gated_delta_rule_reduce";
  return {d, r};
}

std::vector<Binding> gated_delta_rule_input_bindings(const GatedDeltaRuleInputs& in,
                                                     BufferSlice s_in) {
  return {{in.q, false},
          {in.k, false},
          {in.v, false},
          {in.g, false},
          {in.beta, false},
          {given(in.positions) ? in.positions : in.q, false},
          {given(s_in) ? s_in : in.q, false}};
}

}  // namespace remat::kernels

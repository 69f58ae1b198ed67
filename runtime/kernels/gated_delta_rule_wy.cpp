#include "runtime/kernels/gated_delta_rule_wy.h"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "gated_delta_rule_params.h"
#include "graph/delta_rule_workspace.h"

namespace remat::kernels {

namespace {

constexpr uint32_t kBlock = static_cast<uint32_t>(kDeltaRuleBlock);
constexpr uint32_t kMaxHead = 256;
constexpr uint32_t kGroup = 64;
// Elements per unrolled block of the head loops (gated_delta_rule_wy_common.glsl) at most, and
// of the block loops (CUNROLL there).
constexpr uint32_t kHeadUnroll = 8;
constexpr uint32_t kBlockUnroll = 8;
constexpr uint32_t kRows = 8;  // R in gated_delta_rule_wy_forward.comp
constexpr uint32_t kLoopSlack = 64;

uint32_t range_end(const GatedDeltaRuleShape& s) {
  return s.t1 == 0 ? s.T : s.t1;
}

uint32_t head_unroll(uint32_t dk) {
  uint32_t u = std::min(dk, kHeadUnroll);
  while (dk % u != 0) --u;
  return u;
}

uint32_t round4(uint32_t n) {
  return (n + 3) / 4 * 4;
}

// Loop iterations of one serial-pass invocation per block (llvmpipe counts a loop of n iterations
// as n + 1): the u reset, the row groups with their head loop (vec4s) and M u loop (vec4s), the
// state's head loop (vec4s) with a block loop in each.
uint64_t serial_iterations_per_block(uint32_t dk) {
  const uint64_t heads = round4(dk) / 4 + 1, blocks = kBlock / kBlockUnroll + 1;
  return blocks + (kBlock / kRows + 1) * (heads + kBlock / 4 + 1) + heads +
         uint64_t(round4(dk) / 4) * blocks;
}

void check(const GatedDeltaRuleShape& s, uint32_t max_steps) {
  const uint32_t t1 = range_end(s);
  auto fail = [](const std::string& why) {
    throw std::invalid_argument("gated delta rule (chunkwise): " + why);
  };
  if (s.rows == 0 || s.T == 0 || s.Hk == 0 || s.Hv == 0 || s.dk == 0 || s.dv == 0)
    fail("every dimension must be at least 1");
  if (s.dk > kMaxHead || s.dv > kMaxHead) fail("head sizes above 256 are not supported");
  if (s.Hv % s.Hk != 0) fail("value heads must be a multiple of key heads");
  if (s.t0 >= t1 || t1 > s.T) fail("the step range must be non-empty and within T");
  if (s.t0 % kBlock != 0 || (t1 % kBlock != 0 && t1 != s.T))
    fail("a range must start at a multiple of " + std::to_string(kBlock) +
         " steps and end at one or at T (blocks sit at fixed places), not [" +
         std::to_string(s.t0) + ", " + std::to_string(t1) + ")");
  const uint32_t vs = s.v_stride == 0 ? s.Hv * s.dv : s.v_stride;
  if (uint64_t(s.v_offset) + uint64_t(s.Hv) * s.dv > vs) fail("v's heads must fit in its stride");
  if (max_steps != 0 && t1 - s.t0 > max_steps)
    fail(std::to_string(t1 - s.t0) + " steps in one call, but this device runs at most " +
         std::to_string(max_steps) + ": split the range");
}

push::GatedDeltaRuleParams base_params(const GatedDeltaRuleShape& s, bool has_s_in,
                                       bool has_positions, bool has_o, bool has_s_out) {
  return {s.rows,
          s.T,
          s.Hk,
          s.Hv,
          s.dv,
          s.t0,
          range_end(s),
          has_s_in ? 1u : 0u,
          has_positions ? 1u : 0u,
          s.v_stride == 0 ? s.Hv * s.dv : s.v_stride,
          s.v_offset,
          has_o ? 1u : 0u,
          has_s_out ? 1u : 0u};
}

push::GatedDeltaRuleWyParams params(const GatedDeltaRuleShape& s, bool has_s_in, bool has_positions,
                                    bool has_o, bool has_s_out, bool keep = false,
                                    bool has_ds_out = false, bool has_ds_in = false) {
  return {base_params(s, has_s_in, has_positions, has_o, has_s_out), keep ? 1u : 0u,
          has_ds_out ? 1u : 0u, has_ds_in ? 1u : 0u, 0u};
}

// llvmpipe's texel views reach 2^27 texels; the scratch beyond that is read as storage.
constexpr uint64_t kMaxTexelBytes = (uint64_t(1) << 27) * 16;

// The serial and per-token passes read their scratch through texel views where a texel fetch
// beats a storage load (llvmpipe) and the slices fit one view: the same bits either way.
bool texels(const DeviceQuirks& quirks, std::initializer_list<BufferSlice> read) {
  if (!quirks.texel_fetch_beats_storage_loads) return false;
  for (BufferSlice b : read)
    if (b.size > kMaxTexelBytes || b.size % 16 != 0) return false;
  return true;
}

bool given(BufferSlice b) {
  return b.buffer != VK_NULL_HANDLE;
}

// Loop iterations of one invocation of the serial state gradient per block, as above: dSo and
// <S0, dSo>, dO, the row groups of dU with their M and Kd loops, dS's head loop (vec4s) with its
// block loop, and the back substitution (its rows and their vec4s of the rows before).
uint64_t state_backward_iterations_per_block(uint32_t dk) {
  const uint64_t C = kBlock, heads = round4(dk) / 4 + 1;
  uint64_t n = (round4(dk) + 1) + (C + 1) + (C / 4 + 1) * ((C + 1) + heads) +
               heads * (C / kBlockUnroll + 1) + (C + 1);
  for (uint64_t i = 0; i < C; ++i) n += (i + 3) / 4 + 1;
  return n;
}

}  // namespace

uint64_t gated_delta_rule_wy_forward_workspace(const GatedDeltaRuleShape& s) {
  return delta_rule_wy_forward_scratch(s.rows, s.Hv, s.dk, s.dv, range_end(s) - s.t0);
}

uint32_t gated_delta_rule_wy_max_forward_steps(const DeviceQuirks& quirks, uint32_t dk) {
  if (quirks.max_loop_iterations == 0) return 0;
  const uint64_t fixed = 2 * (round4(dk) + 1) + 1 + kLoopSlack;
  if (quirks.max_loop_iterations <= fixed) return 0;
  // The count above fell one block short of Mesa 22.3's at dk 64 (its test found the last block
  // unrun); a quarter more per block keeps clear of what it leaves out.
  const uint64_t per_block = serial_iterations_per_block(dk) + 1;
  const uint64_t blocks = (quirks.max_loop_iterations - fixed) / (per_block + per_block / 4);
  return static_cast<uint32_t>(blocks * kBlock);
}

GatedDeltaRuleWyWorkspace gated_delta_rule_wy_backward_workspace(const GatedDeltaRuleShape& s) {
  const DeltaRuleWyBackwardScratch w =
      delta_rule_wy_backward_scratch(s.rows, s.Hv, s.dk, s.dv, range_end(s) - s.t0);
  return {w.work_bytes, w.keep_bytes, w.partial_bytes};
}

// The serial passes bound it: the forward's (keeping, one more head loop per block) and the state
// gradient's, each with a quarter more per block as the forward's.
uint32_t gated_delta_rule_wy_max_backward_steps(const DeviceQuirks& quirks, uint32_t dk) {
  if (quirks.max_loop_iterations == 0) return 0;
  const uint64_t fixed = 2 * (round4(dk) + 1) + 1 + kLoopSlack;
  if (quirks.max_loop_iterations <= fixed) return 0;
  const uint64_t per_block = std::max(serial_iterations_per_block(dk) + round4(dk) + 2,
                                      state_backward_iterations_per_block(dk)) +
                             1;
  const uint64_t blocks = (quirks.max_loop_iterations - fixed) / (per_block + per_block / 4);
  return static_cast<uint32_t>(blocks * kBlock);
}

uint32_t gated_delta_rule_wy_max_steps(const DeviceQuirks& quirks, uint32_t dk) {
  const uint32_t fwd = gated_delta_rule_wy_max_forward_steps(quirks, dk);
  const uint32_t bwd = gated_delta_rule_wy_max_backward_steps(quirks, dk);
  if (fwd == 0 || bwd == 0) return std::max(fwd, bwd);
  return std::min(fwd, bwd);
}

std::vector<Dispatch> gated_delta_rule_wy_forward(const DeviceQuirks& quirks,
                                                  const GatedDeltaRuleShape& s,
                                                  const GatedDeltaRuleInputs& in, BufferSlice s_in,
                                                  BufferSlice o, BufferSlice s_out,
                                                  BufferSlice workspace) {
  check(s, gated_delta_rule_wy_max_forward_steps(quirks, s.dk));
  if (!given(o) && !given(s_out))
    throw std::invalid_argument(
        "gated delta rule forward (chunkwise): neither o nor s_out to write");
  const uint32_t blocks = div_up(range_end(s) - s.t0, kBlock), unroll = head_unroll(s.dk);
  const auto p = push_bytes(params(s, given(s_in), given(in.positions), given(o), given(s_out)));

  Dispatch stage;
  stage.kernel = KernelId::gated_delta_rule_wy_stage;
  stage.spec = {kBlock, 1, 1, s.dk, kBlock, unroll};
  stage.bindings = gated_delta_rule_input_bindings(in, s_in);
  stage.bindings.push_back({workspace, true});
  stage.push = p;
  stage.groups = {blocks, s.Hv, s.rows};
  stage.label = "gated_delta_rule_wy_stage";

  Dispatch prep = stage;
  prep.kernel = texels(quirks, {workspace}) ? KernelId::gated_delta_rule_wy_prepare_texels
                                            : KernelId::gated_delta_rule_wy_prepare;
  prep.bindings.push_back({workspace, false});  // Kr read here, the rest written through 7
  prep.label = "gated_delta_rule_wy_prepare";

  Dispatch solve = stage;
  solve.kernel = texels(quirks, {workspace}) ? KernelId::gated_delta_rule_wy_solve_texels
                                             : KernelId::gated_delta_rule_wy_solve;
  solve.bindings.push_back({workspace, false});  // read here, written through binding 7
  solve.spec = {kGroup, 1, 1, s.dk, kBlock, unroll};
  // Four columns per invocation.
  solve.groups = {div_up((round4(s.dv) + round4(s.dk)) / 4, kGroup), blocks, s.rows * s.Hv};
  solve.label = "gated_delta_rule_wy_solve";

  Dispatch serial;
  serial.kernel = texels(quirks, {workspace}) ? KernelId::gated_delta_rule_wy_forward_texels
                                              : KernelId::gated_delta_rule_wy_forward;
  // Four columns per invocation.
  const uint32_t group = std::min(kGroup, div_up(s.dv, 4));
  serial.spec = {group, 1, 1, s.dk, kBlock, unroll};
  serial.bindings = gated_delta_rule_input_bindings(in, s_in);
  serial.bindings.push_back({workspace, false});
  // Without o its binding repeats s_out, never written through it; without s_out, o.
  serial.bindings.push_back({given(o) ? o : s_out, true});
  serial.bindings.push_back({given(s_out) ? s_out : o, true});
  serial.bindings.push_back({given(o) ? o : s_out, true});  // keep: not written without it
  serial.push = p;
  serial.groups = {div_up(div_up(s.dv, 4), group), s.Hv, s.rows};
  serial.label = "gated_delta_rule_wy_forward";
  return {stage, prep, solve, serial};
}

std::vector<Dispatch> gated_delta_rule_wy_backward(
    const DeviceQuirks& quirks, const GatedDeltaRuleShape& s, const GatedDeltaRuleInputs& in,
    BufferSlice s_in, BufferSlice d_o, BufferSlice ds_out, const GatedDeltaRuleGrads& grads,
    BufferSlice work, BufferSlice keep, BufferSlice partials) {
  check(s, gated_delta_rule_wy_max_backward_steps(quirks, s.dk));
  const uint32_t L = range_end(s) - s.t0, blocks = div_up(L, kBlock), unroll = head_unroll(s.dk);
  const bool has_ds_in = given(grads.ds_in);
  const auto p = push_bytes(
      params(s, given(s_in), given(in.positions), false, false, true, given(ds_out), has_ds_in));
  // The forward's first two passes over the same range: the same bits.
  std::vector<Dispatch> ds = gated_delta_rule_wy_forward(quirks, s, in, s_in, keep, keep, work);
  Dispatch& fwd = ds[3];
  fwd.push = p;  // keep on, neither o nor s_out
  fwd.bindings[8] = {keep, true};
  fwd.bindings[9] = {keep, true};
  fwd.bindings[10] = {keep, true};
  for (Dispatch& d : ds) d.label = "gated_delta_rule_wy_backward " + d.label;

  const uint32_t group = std::min(kGroup, div_up(s.dv, 4));
  Dispatch st;
  st.kernel = texels(quirks, {work}) ? KernelId::gated_delta_rule_wy_state_backward_texels
                                     : KernelId::gated_delta_rule_wy_state_backward;
  st.spec = {group, 1, 1, s.dk, kBlock, unroll};
  st.bindings = gated_delta_rule_input_bindings(in, s_in);
  st.bindings.push_back({work, false});
  st.bindings.push_back({keep, true});
  st.bindings.push_back({d_o, false});
  st.bindings.push_back({given(ds_out) ? ds_out : d_o, false});
  st.bindings.push_back({grads.dv, true});
  // Without dS_in its binding repeats dv, never written through it.
  st.bindings.push_back({has_ds_in ? grads.ds_in : grads.dv, true});
  st.push = p;
  st.groups = {div_up(div_up(s.dv, 4), group), s.Hv, s.rows};
  st.label = "gated_delta_rule_wy_state_backward";

  Dispatch dots;
  dots.kernel = texels(quirks, {work, keep}) ? KernelId::gated_delta_rule_wy_dots_texels
                                             : KernelId::gated_delta_rule_wy_dots;
  dots.spec = {kBlock, 1, 1, s.dk, kBlock, unroll};
  dots.bindings = gated_delta_rule_input_bindings(in, s_in);
  dots.bindings.push_back({keep, false});  // read here, written through binding 10
  dots.bindings.push_back({d_o, false});
  dots.bindings.push_back({work, false});
  dots.bindings.push_back({keep, true});
  dots.push = p;
  dots.groups = {blocks, s.Hv, s.rows};
  dots.label = "gated_delta_rule_wy_dots";

  Dispatch tok = dots;
  tok.kernel = texels(quirks, {work, keep}) ? KernelId::gated_delta_rule_wy_token_backward_texels
                                            : KernelId::gated_delta_rule_wy_token_backward;
  tok.bindings.resize(9);  // bindings 0-8 as the pair terms'; keep read, written through 12
  tok.bindings.push_back({partials, true});
  tok.bindings.push_back({grads.dbeta, true});
  tok.bindings.push_back({work, false});
  tok.bindings.push_back({keep, true});
  tok.label = "gated_delta_rule_wy_token_backward";

  Dispatch fin;
  fin.kernel = KernelId::gated_delta_rule_wy_finish;
  fin.spec = {kGroup, 1, 1, s.dk, kBlock, unroll};
  fin.bindings = gated_delta_rule_input_bindings(in, s_in);
  fin.bindings.push_back({keep, false});
  fin.bindings.push_back({partials, false});
  fin.bindings.push_back({grads.dq, true});
  fin.bindings.push_back({grads.dk, true});
  fin.bindings.push_back({grads.dg, true});
  fin.push = p;
  const uint64_t items = uint64_t(s.rows) * L * (uint64_t(s.Hk) * s.dk + s.Hv);
  fin.groups = {grid_stride_groups(items, kGroup), 1, 1};
  fin.label = "gated_delta_rule_wy_finish";

  ds.insert(ds.end(), {st, dots, tok, fin});
  return ds;
}

}  // namespace remat::kernels

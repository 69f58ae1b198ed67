// Qwen3.5's op kinds onto their kernels (Gated DeltaNet and gated attention; docs/ops.md). Operands
// are read by their schema names (graph/op_schema_qwen35.h). Inputs read in place from a wider
// tensor (OpAttrs::slice_offset) are bound whole and addressed by the kernels' strides, so their
// gradients land at the same places and nothing else of that tensor is touched.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "graph/delta_rule_workspace.h"
#include "runtime/kernels/causal_conv1d.h"
#include "runtime/kernels/gated_delta_rule_wy.h"
#include "runtime/kernels/gated_rmsnorm.h"
#include "runtime/kernels/gdn_gates.h"
#include "runtime/kernels/l2norm.h"
#include "runtime/kernels/sigmoid_gate.h"
#include "runtime/lowering_context.h"

namespace remat {
namespace {

uint32_t u32(int v) {
  return static_cast<uint32_t>(v);
}

BufferSlice part(BufferSlice whole, uint64_t at, uint64_t bytes) {
  if (at + bytes > whole.size) throw std::logic_error("lowering: a part past its tensor's end");
  return {whole.buffer, whole.offset + at, bytes};
}

}  // namespace

kernels::CausalConv1dShape LoweringContext::conv_shape(TensorId x, TensorId w) const {
  return {dim(x, 0), dim(x, 1), dim(x, 2), dim(w, 1)};
}

// x is read at its rows' places (slice_offset into rows of dim(x, -1)); y is dense [.., heads·D].
kernels::L2normShape LoweringContext::l2norm_shape(const Step& s, TensorId x, TensorId y) const {
  const uint32_t heads = u32(s.attrs.heads);
  return {count(y) / dim(y, -1),     heads,       dim(y, -1) / heads, dim(x, -1),
          u32(s.attrs.slice_offset), s.attrs.eps, s.attrs.scale};
}

kernels::SigmoidGateShape LoweringContext::sigmoid_gate_shape(const Step& s, TensorId x,
                                                              TensorId gate) const {
  const uint32_t heads = u32(s.attrs.heads);
  return {count(x), dim(x, -1) / heads, dim(gate, -1) / heads, u32(s.attrs.slice_offset)};
}

// q, k [B, T, Hk·dk] dense; v read in place from the conv output [B, T, W] at slice_offset;
// g [B, T, Hv]. dv follows from v's part: W - slice_offset floats of Hv heads.
kernels::GatedDeltaRuleShape LoweringContext::delta_shape(const Step& s, TensorId k, TensorId v,
                                                          TensorId g) const {
  const uint32_t hk = u32(s.attrs.kv_heads), hv = u32(s.attrs.heads);
  kernels::GatedDeltaRuleShape d;
  d.rows = dim(g, 0);
  d.T = dim(g, 1);
  d.Hk = hk;
  d.Hv = hv;
  d.dk = dim(k, -1) / hk;
  d.dv = (dim(v, -1) - u32(s.attrs.slice_offset)) / hv;
  d.v_stride = dim(v, -1);
  d.v_offset = u32(s.attrs.slice_offset);
  return d;
}

// The chunk lengths the graph cut T into (TrainShape::delta_chunk): chunk_len, or T whole.
uint32_t LoweringContext::delta_chunk(const Step& s, uint32_t T) {
  return s.attrs.chunk_len > 0 ? std::min(u32(s.attrs.chunk_len), T) : T;
}

// Chunk c's start state (c >= 1) in the states tensor [N-1, B, Hv, dk, dv]. Each is bound on its
// own, so its offset must be one the device binds at.
BufferSlice LoweringContext::chunk_state(BufferSlice states, const kernels::GatedDeltaRuleShape& d,
                                         uint32_t c) const {
  const uint64_t bytes = 4ull * d.rows * d.Hv * d.dk * d.dv;
  if (bytes % plan.alignment != 0)
    throw std::invalid_argument(
        "gated delta rule: a chunk-start state of " + std::to_string(bytes) +
        " bytes is not a multiple of the device's " + std::to_string(plan.alignment) +
        "-byte binding alignment; use --delta-chunk 0");
  return part(states, uint64_t(c - 1) * bytes, bytes);
}

// A chunk one call must run whole: the rule's forward has no state to carry a split chunk through,
// nor its backward the states inside one. A chunk is one forward and one backward call, so the
// limit is the smaller of the two (a session's chosen chunk keeps within it:
// SessionPlanRequest::max_delta_steps).
void LoweringContext::check_delta_range(uint32_t steps, uint32_t dk) const {
  const uint32_t max = kernels::gated_delta_rule_wy_max_steps(quirks, dk);
  if (max != 0 && steps > max)
    throw std::invalid_argument("gated delta rule: a chunk of " + std::to_string(steps) +
                                " steps, but this device runs at most " + std::to_string(max) +
                                " in one call; use --delta-chunk " + std::to_string(max) +
                                " or less");
}

void LoweringContext::qwen35(const Step& s) {
  const auto in = [&](std::size_t slot) { return s.inputs.at(slot); };
  const auto out = [&](std::size_t slot) { return s.outputs.at(slot); };
  const auto bin = [&](std::size_t slot) { return at(in(slot)); };
  const auto bout = [&](std::size_t slot) { return at(out(slot)); };
  switch (s.kind) {
    case OpKind::causal_conv1d: {
      namespace c = slot::causal_conv1d;
      return add(
          kernels::causal_conv1d_forward(conv_shape(in(c::x), in(c::weight)), bin(c::x),
                                         bin(c::weight), bout(c::y), positions(s, c::positions)),
          s);
    }
    case OpKind::causal_conv1d_backward: {
      namespace c = slot::causal_conv1d_backward;
      const auto shape = conv_shape(in(c::x), in(c::weight));
      add(kernels::causal_conv1d_backward_input(shape, bin(c::dy), bin(c::x), bin(c::weight),
                                                bout(c::dx), mode(s, c::dx),
                                                positions(s, c::positions)),
          s);
      if (s.attrs.frozen) return;
      return add(kernels::causal_conv1d_backward_weight(
                     quirks, shape, bin(c::dy), bin(c::x), bin(c::weight), bout(c::dweight),
                     mode(s, c::dweight), positions(s, c::positions)),
                 s);
    }
    case OpKind::l2norm: {
      namespace l = slot::l2norm;
      return add(
          kernels::l2norm_forward(l2norm_shape(s, in(l::x), out(l::y)), bin(l::x), bout(l::y)), s);
    }
    case OpKind::l2norm_backward: {
      namespace l = slot::l2norm_backward;
      return add(kernels::l2norm_backward(l2norm_shape(s, in(l::x), in(l::dy)), bin(l::dy),
                                          bin(l::x), bout(l::dx), mode(s, l::dx)),
                 s);
    }
    case OpKind::gdn_gates: {
      namespace q = slot::gdn_gates;
      const kernels::GdnGatesShape shape{count(in(q::a)) / dim(in(q::a), -1), dim(in(q::a), -1)};
      return add(kernels::gdn_gates_forward(shape, bin(q::a), bin(q::b), bin(q::a_log),
                                            bin(q::dt_bias), bout(q::g), bout(q::beta)),
                 s);
    }
    case OpKind::gdn_gates_backward: {
      namespace q = slot::gdn_gates_backward;
      const kernels::GdnGatesShape shape{count(in(q::a)) / dim(in(q::a), -1), dim(in(q::a), -1)};
      kernels::GdnGatesGrads grads{bout(q::da), bout(q::db),    {},
                                   {},          mode(s, q::da), mode(s, q::db)};
      if (!s.attrs.frozen) {
        if (acc(s, q::da_log) != acc(s, q::ddt_bias))
          throw std::logic_error("gdn_gates_backward: dA_log and ddt_bias accumulate differently");
        grads.da_log = bout(q::da_log), grads.ddt_bias = bout(q::ddt_bias);
        grads.params_mode = mode(s, q::da_log);
      }
      return add(kernels::gdn_gates_backward(shape, bin(q::dg), bin(q::dbeta), bin(q::a), bin(q::b),
                                             bin(q::a_log), bin(q::dt_bias), grads),
                 s);
    }
    case OpKind::gated_rmsnorm: {
      namespace r = slot::gated_rmsnorm;
      const kernels::GatedRmsnormShape shape{count(in(r::o)) / count(in(r::weight)),
                                             count(in(r::weight)), s.attrs.eps};
      return add(kernels::gated_rmsnorm_forward(shape, bin(r::o), bin(r::z), bin(r::weight),
                                                bout(r::y), bout(r::rstd)),
                 s);
    }
    case OpKind::gated_rmsnorm_backward: {
      namespace r = slot::gated_rmsnorm_backward;
      const kernels::GatedRmsnormShape shape{count(in(r::o)) / count(in(r::weight)),
                                             count(in(r::weight)), s.attrs.eps};
      add(kernels::gated_rmsnorm_backward(shape, bin(r::dy), bin(r::o), bin(r::z), bin(r::weight),
                                          bin(r::rstd), bout(r::d_o), bout(r::dz), mode(s, r::d_o),
                                          mode(s, r::dz)),
          s);
      if (s.attrs.frozen) return;
      return add(kernels::gated_rmsnorm_backward_weight(shape, bin(r::dy), bin(r::o), bin(r::z),
                                                        bin(r::rstd), bout(r::dweight),
                                                        mode(s, r::dweight)),
                 s);
    }
    case OpKind::sigmoid_gate: {
      namespace g = slot::sigmoid_gate;
      return add(kernels::sigmoid_gate_forward(sigmoid_gate_shape(s, in(g::x), in(g::gate)),
                                               bin(g::x), bin(g::gate), bout(g::y)),
                 s);
    }
    case OpKind::sigmoid_gate_backward: {
      namespace g = slot::sigmoid_gate_backward;
      return add(kernels::sigmoid_gate_backward(sigmoid_gate_shape(s, in(g::x), in(g::gate)),
                                                bin(g::dy), bin(g::x), bin(g::gate), bout(g::dx),
                                                bout(g::dgate), mode(s, g::dx), mode(s, g::dgate)),
                 s);
    }
    case OpKind::gated_delta_state:
      return delta_state(s);
    case OpKind::gated_delta_rule:
      return delta_rule(s);
    case OpKind::gated_delta_rule_backward:
      return delta_rule_backward(s);
    default:
      throw std::logic_error("no lowering for op kind " + std::string(op_kind_name(s.kind)));
  }
}

// The recurrence once over chunks 0 .. N-2, writing each chunk's end state as the next one's
// start: no o (the rule's own op computes it from these states). Each chunk runs in chunkwise
// (WY) form through the op's workspace.
void LoweringContext::delta_state(const Step& s) {
  namespace d = slot::gated_delta_state;
  const auto bin = [&](std::size_t slot) { return at(s.inputs.at(slot)); };
  auto shape = delta_shape(s, s.inputs.at(d::k), s.inputs.at(d::v), s.inputs.at(d::g));
  // No q: the forward reads none without o; k fills its binding.
  const kernels::GatedDeltaRuleInputs inputs{bin(d::k), bin(d::k),    bin(d::v),
                                             bin(d::g), bin(d::beta), positions(s, d::positions)};
  const uint32_t len = delta_chunk(s, shape.T);
  check_delta_range(len, shape.dk);
  const BufferSlice states = at(s.outputs.at(d::states)), ws = at(s.outputs.at(d::workspace));
  for (uint32_t c = 0; (c + 1) * len < shape.T; ++c) {
    shape.t0 = c * len, shape.t1 = (c + 1) * len;
    const BufferSlice start = c == 0 ? BufferSlice{} : chunk_state(states, shape, c);
    add(kernels::gated_delta_rule_wy_forward(
            quirks, shape, inputs, start, {}, chunk_state(states, shape, c + 1),
            part(ws, 0, kernels::gated_delta_rule_wy_forward_workspace(shape))),
        s);
  }
}

// o chunk by chunk, each from its kept start state (the first from zero), in chunkwise form
// through the op's workspace.
void LoweringContext::delta_rule(const Step& s) {
  namespace d = slot::gated_delta_rule;
  const auto bin = [&](std::size_t slot) { return at(s.inputs.at(slot)); };
  auto shape = delta_shape(s, s.inputs.at(d::k), s.inputs.at(d::v), s.inputs.at(d::g));
  // positions, when packed, come last (after the states when chunked).
  const BufferSlice pos = s.attrs.packed ? at(s.inputs.back()) : BufferSlice{};
  const kernels::GatedDeltaRuleInputs inputs{bin(d::q), bin(d::k),    bin(d::v),
                                             bin(d::g), bin(d::beta), pos};
  const uint32_t len = delta_chunk(s, shape.T);
  check_delta_range(len, shape.dk);
  const BufferSlice states = len < shape.T ? bin(d::states) : BufferSlice{};
  const BufferSlice ws = at(s.outputs.at(d::workspace));
  for (uint32_t c = 0; c * len < shape.T; ++c) {
    shape.t0 = c * len, shape.t1 = std::min(shape.T, (c + 1) * len);
    const BufferSlice start = c == 0 ? BufferSlice{} : chunk_state(states, shape, c);
    add(kernels::gated_delta_rule_wy_forward(
            quirks, shape, inputs, start, at(s.outputs.at(d::o)), {},
            part(ws, 0, kernels::gated_delta_rule_wy_forward_workspace(shape))),
        s);
  }
}

// The chunks last first, each recomputing its blocks' states from its kept start state into the
// workspace's chunkwise scratch; dL/dS crosses each chunk boundary through the workspace's two
// carries, alternating.
void LoweringContext::delta_rule_backward(const Step& s) {
  namespace d = slot::gated_delta_rule_backward;
  const auto bin = [&](std::size_t slot) { return at(s.inputs.at(slot)); };
  const auto bout = [&](std::size_t slot) { return at(s.outputs.at(slot)); };
  for (std::size_t o : {d::dq, d::dk, d::dv, d::dg, d::dbeta})
    if (acc(s, o))
      throw std::logic_error(
          "gated_delta_rule_backward: the kernel overwrites its gradients, but '" +
          tensor(s.outputs.at(o)).name + "' accumulates");
  auto shape = delta_shape(s, s.inputs.at(d::k), s.inputs.at(d::v), s.inputs.at(d::g));
  // positions, when packed, come last (after the states when chunked).
  const BufferSlice pos = s.attrs.packed ? at(s.inputs.back()) : BufferSlice{};
  const kernels::GatedDeltaRuleInputs inputs{bin(d::q), bin(d::k),    bin(d::v),
                                             bin(d::g), bin(d::beta), pos};
  const uint32_t len = delta_chunk(s, shape.T), chunks = (shape.T + len - 1) / len;
  check_delta_range(len, shape.dk);
  const DeltaRuleWorkspaceLayout w =
      delta_rule_workspace_layout({shape.rows, shape.Hv, shape.dk, shape.dv, len});
  const BufferSlice ws = bout(d::workspace);
  if (ws.size < w.bytes)
    throw std::logic_error("gated_delta_rule_backward: the workspace is smaller than its layout");
  const BufferSlice carry[2] = {part(ws, w.carry_at[0], w.carry_bytes),
                                part(ws, w.carry_at[1], w.carry_bytes)};
  const BufferSlice states = len < shape.T ? bin(d::states) : BufferSlice{};
  const kernels::GatedDeltaRuleGrads grads{bout(d::dq), bout(d::dk),    bout(d::dv),
                                           bout(d::dg), bout(d::dbeta), {}};
  for (uint32_t c = chunks; c-- > 0;) {
    shape.t0 = c * len, shape.t1 = std::min(shape.T, (c + 1) * len);
    const auto k = kernels::gated_delta_rule_wy_backward_workspace(shape);
    kernels::GatedDeltaRuleGrads g = grads;
    if (c > 0) g.ds_in = carry[c % 2];
    add(kernels::gated_delta_rule_wy_backward(
            quirks, shape, inputs, c == 0 ? BufferSlice{} : chunk_state(states, shape, c),
            bin(d::dout), c + 1 == chunks ? BufferSlice{} : carry[(c + 1) % 2], g,
            part(ws, w.work_at, k.work_bytes), part(ws, w.keep_at, k.keep_bytes),
            part(ws, w.partials_at, k.partial_bytes)),
        s);
  }
}

}  // namespace remat

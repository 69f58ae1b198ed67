// The state of lowering one plan (runtime/step_lowering.h): where each tensor's bytes are, the
// extras the optimizer and dropout read, the dispatches emitted so far, and the operand access
// every op's lowering shares (shapes, accumulation, activation dtypes). Each op kind's kernels
// are chosen in runtime/op_lowering.cpp. Internal to runtime/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/op_schema.h"
#include "optimizer_params.h"
#include "planner/plan.h"
#include "runtime/kernels/attention.h"
#include "runtime/kernels/causal_conv1d.h"
#include "runtime/kernels/cross_entropy.h"
#include "runtime/kernels/dropout.h"
#include "runtime/kernels/embedding.h"
#include "runtime/kernels/embedding_blocks.h"
#include "runtime/kernels/gated_delta_rule.h"
#include "runtime/kernels/gelu.h"
#include "runtime/kernels/head_loss.h"
#include "runtime/kernels/l2norm.h"
#include "runtime/kernels/layernorm.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/matmul_backward.h"
#include "runtime/kernels/matmul_blocks.h"
#include "runtime/kernels/optimizer.h"
#include "runtime/kernels/optimizer_table.h"
#include "runtime/kernels/residual.h"
#include "runtime/kernels/rmsnorm.h"
#include "runtime/kernels/rope.h"
#include "runtime/kernels/sigmoid_gate.h"
#include "runtime/kernels/swiglu.h"
#include "runtime/step_lowering.h"

namespace remat {

// Op kinds with kernels for f16/bf16 activations (shaders/act16.glsl). Ops whose every operand
// is fp32 (the backward of dropout, residual, rope; the optimizer) need none.
bool has_16bit_kernel(OpKind k);

struct LoweringContext {
  using GradWrite = kernels::GradWrite;

  const Plan& plan;
  const DeviceQuirks& quirks;
  const TensorSlices& slice_of;
  const LoweringExtras& extras;
  std::vector<Dispatch> out;
  int step_index = -1;  // the Plan::steps index being lowered, stamped on each dispatch
  // The optimizer table when extras.optimizer_table is set: the gradient norm and AdamW then run
  // over all parameters at once (runtime/kernels/optimizer_table.h).
  std::optional<kernels::OptimizerTable> table;
  bool adamw_table_done = false;  // the first AdamW step emitted every parameter's update

  const Tensor& tensor(TensorId id) const {
    return plan.tensors.at(static_cast<size_t>(id)).tensor;
  }
  BufferSlice at(TensorId id) const { return slice_of(id); }
  BufferSlice bin_of(const Step& s, std::size_t slot) const { return at(s.inputs.at(slot)); }
  uint32_t count(TensorId id) const { return static_cast<uint32_t>(tensor(id).elements()); }
  uint32_t dim(TensorId id, int axis) const {
    const auto& s = tensor(id).shape;
    return static_cast<uint32_t>(s.at(axis < 0 ? s.size() + axis : static_cast<size_t>(axis)));
  }
  static bool acc(const Step& s, size_t output) {
    return output < s.attrs.accumulate.size() && s.attrs.accumulate[output] != 0;
  }
  static GradWrite mode(const Step& s, size_t output) {
    return acc(s, output) ? GradWrite::accumulate : GradWrite::overwrite;
  }
  void add(Dispatch d, const Step& s) {
    d.label = std::string(op_kind_name(s.kind)) + " " + tensor(s.outputs.at(0)).name;
    d.step = step_index;
    out.push_back(std::move(d));
  }
  void add(std::vector<Dispatch> ds, const Step& s) {
    for (auto& d : ds) add(std::move(d), s);
  }
  // The storage type of an op's activations, which the graph gives them all alike
  // (graph/block_emitter.h); it chooses the kernel variant.
  DType act(std::initializer_list<TensorId> ids) const {
    const DType t = tensor(*ids.begin()).dtype;
    for (TensorId id : ids)
      if (tensor(id).dtype != t)
        throw std::logic_error("activations '" + tensor(*ids.begin()).name + "' and '" +
                               tensor(id).name + "' of one op are stored differently");
    return t;
  }
  // Refuses a step with a 16-bit operand whose op has no 16-bit kernel, and any 16-bit
  // gradient: activation gradients stay fp32.
  void check_storage(const Step& s) const {
    const auto check = [&](TensorId id) {
      const Tensor& t = tensor(id);
      // Parameters may be stored in 16 bits too (a frozen base); their kernels check them.
      if ((t.dtype != DType::f16 && t.dtype != DType::bf16) || is_persistent_role(t.role)) return;
      if (t.role == Role::activation_grad || !has_16bit_kernel(s.kind))
        throw std::invalid_argument(std::string(dtype_name(t.dtype)) +
                                    " activations: " + std::string(op_kind_name(s.kind)) + " ('" +
                                    t.name + "') has no 16-bit kernel; use --act-dtype f32");
    };
    for (TensorId id : s.inputs) check(id);
    for (TensorId id : s.outputs) check(id);
  }

  kernels::MatmulShape matmul_shape(const Step& s, TensorId x, TensorId w) const {
    kernels::MatmulShape m;
    m.K = dim(x, -1);
    m.M = count(x) / m.K;
    m.layout = s.attrs.w_layout == WeightLayout::in_out ? kernels::WeightLayout::in_out
                                                        : kernels::WeightLayout::out_in;
    m.N = m.layout == kernels::WeightLayout::in_out ? dim(w, 1) : dim(w, 0);
    m.w_dtype = tensor(w).dtype;  // a frozen base may be stored in 16 bits
    // or in blocks, which the block matmuls decode (their shape's w_dtype stays f32)
    if (m.w_dtype == DType::blocks) m.w_dtype = DType::f32;
    m.x_dtype = tensor(x).dtype;  // activations may be too (dx, given for a frozen weight's x, is
    m.y_dtype = m.x_dtype;        // f32: dinp's kernel reads neither)
    return m;
  }
  // qkv is [B·T, 3C]; B and T come from the statistics lse[B, NH, T].
  kernels::AttentionShape attention_shape(const Step& s, TensorId qkv, TensorId lse) const {
    return {dim(lse, 0), dim(lse, 2), dim(qkv, -1) / 3,  static_cast<uint32_t>(s.attrs.heads),
            0,           window(s),   s.attrs.attn_scale};
  }
  // The sliding window of an attention step (0: all keys); a negative one is a graph bug.
  static uint32_t window(const Step& s) {
    if (s.attrs.window < 0)
      throw std::logic_error(std::string(op_kind_name(s.kind)) + ": negative window " +
                             std::to_string(s.attrs.window));
    return static_cast<uint32_t>(s.attrs.window);
  }
  kernels::EmbeddingShape embedding_shape(TensorId tokens, TensorId wte, TensorId wpe) const {
    return {dim(tokens, 0), dim(tokens, 1), dim(wte, 1),
            dim(wte, 0),    dim(wpe, 0),    tensor(wte).dtype};
  }
  kernels::EmbeddingShape embedding_out(kernels::EmbeddingShape s, TensorId x) const {
    s.x_dtype = tensor(x).dtype;
    return s;
  }
  // x is [B, T, heads·D] (graph/llama_builder.h); rotary_dims 0 turns the whole head.
  kernels::RopeShape rope_shape(const Step& s, TensorId x) const {
    const uint32_t heads = static_cast<uint32_t>(s.attrs.heads);
    if (s.attrs.rotary_dims < 0)
      throw std::invalid_argument("rope: rotary_dims " + std::to_string(s.attrs.rotary_dims) +
                                  " is negative");
    return {dim(x, 0),
            dim(x, 1),
            heads,
            dim(x, -1) / heads,
            s.attrs.rope_theta,
            s.attrs.rope_llama3,
            static_cast<uint32_t>(s.attrs.rotary_dims)};
  }
  // Rows as long as the weight: [B·T, C] for a layer's norm, B·T·heads rows of D for Qwen3's
  // per-head q_norm and k_norm over x [B, T, heads·D] (graph/llama_builder.cpp). `dense` is y or
  // dy; an x wider than it holds each row in place, heads rows per token (Qwen3.5's q in q_proj's
  // [q | gate] per head: graph/qwen35_builder.cpp).
  kernels::RmsnormShape rmsnorm_shape(const Step& s, TensorId x, TensorId dense,
                                      TensorId weight) const {
    const uint32_t c = count(weight);
    if (c == 0 || count(dense) % c != 0)
      throw std::logic_error("rmsnorm: y's elements are no whole rows of the weight's length");
    kernels::RmsnormShape shape{count(dense) / c, c, s.attrs.eps, s.attrs.norm_offset};
    if (dim(x, -1) == dim(dense, -1)) return shape;
    const uint32_t heads = static_cast<uint32_t>(s.attrs.heads);
    if (heads == 0 || dim(dense, -1) != heads * c || dim(x, -1) % heads != 0 ||
        s.attrs.slice_offset != 0)
      throw std::logic_error("rmsnorm: x's rows are not heads rows at a stride from offset 0");
    shape.x_stride = dim(x, -1) / heads;
    return shape;
  }
  kernels::DropoutKey dropout_key(const Step& s) const {
    // The step comes from AdamWHyper::step, which the host rewrites before every submission.
    constexpr uint32_t kStepWord = offsetof(push::AdamWHyper, step) / 4;
    return {extras.dropout_seed, 0, s.attrs.dropout_id, extras.adamw_hyper, kStepWord};
  }
  // Where the loss backward reads d(loss)/d(row's loss) when it runs: the mean's one scale, a
  // count only the step's data knows, or under Plan::row_loss_scales one per row.
  kernels::LossScale loss_scale() const {
    if (plan.row_loss_scales) return {extras.adamw_hyper, extras.row_scales_word, true};
    return {extras.adamw_hyper, offsetof(push::AdamWHyper, loss_scale) / 4, false};
  }
  // A packed step's positions (its input `slot`), or an empty slice for plain causal rows.
  BufferSlice positions(const Step& s, size_t slot) const {
    return s.attrs.packed ? at(s.inputs.at(slot)) : BufferSlice{};
  }
  // Appends the dispatches of step `s` (runtime/op_lowering.cpp).
  void step(const Step& s);

 private:
  // Qwen3.5's op kinds (runtime/op_lowering_qwen35.cpp).
  void qwen35(const Step& s);
  kernels::CausalConv1dShape conv_shape(TensorId x, TensorId w) const;
  kernels::L2normShape l2norm_shape(const Step& s, TensorId x, TensorId y) const;
  kernels::SigmoidGateShape sigmoid_gate_shape(const Step& s, TensorId x, TensorId gate) const;
  kernels::GatedDeltaRuleShape delta_shape(const Step& s, TensorId k, TensorId v, TensorId g) const;
  static uint32_t delta_chunk(const Step& s, uint32_t T);
  BufferSlice chunk_state(BufferSlice states, const kernels::GatedDeltaRuleShape& d,
                          uint32_t c) const;
  void check_delta_range(uint32_t steps, uint32_t dk) const;
  void delta_state(const Step& s);
  void delta_rule(const Step& s);
  void delta_rule_backward(const Step& s);

  kernels::AttentionShape gqa_shape(const Step& s, TensorId q, TensorId lse) const;
  void gqa_attention(const Step& s);
  kernels::HeadLossShape head_loss_shape(const Step& s, TensorId x, TensorId w) const;
  void head_loss(const Step& s);
  void grad_norm(const Step& s);
  void adamw(const Step& s);
};

}  // namespace remat

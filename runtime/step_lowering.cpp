#include "runtime/step_lowering.h"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "graph/op_schema.h"
#include "optimizer_params.h"
#include "runtime/kernels/attention.h"
#include "runtime/kernels/cross_entropy.h"
#include "runtime/kernels/dropout.h"
#include "runtime/kernels/embedding.h"
#include "runtime/kernels/gelu.h"
#include "runtime/kernels/head_loss.h"
#include "runtime/kernels/layernorm.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/matmul_backward.h"
#include "runtime/kernels/optimizer.h"
#include "runtime/kernels/residual.h"
#include "runtime/kernels/rmsnorm.h"
#include "runtime/kernels/rope.h"
#include "runtime/kernels/swiglu.h"

namespace remat {

namespace {

using kernels::GradWrite;

// Op kinds with kernels for f16/bf16 activations (shaders/act16.glsl). Ops whose every operand
// is fp32 (the backward of dropout, residual, rope; the optimizer) need none.
bool has_16bit_kernel(OpKind k) {
  switch (k) {
    case OpKind::layernorm:
    case OpKind::layernorm_backward:
    case OpKind::attention:
    case OpKind::attention_backward:
    case OpKind::gqa_attention:
    case OpKind::gqa_attention_backward:
    case OpKind::gelu:
    case OpKind::gelu_backward:
    case OpKind::residual:
    case OpKind::dropout:
    case OpKind::matmul:
    case OpKind::matmul_backward:
    case OpKind::embedding:
    case OpKind::token_embedding:
    case OpKind::head_loss:
    case OpKind::head_loss_backward:
    case OpKind::cross_entropy:
    case OpKind::cross_entropy_backward:
    case OpKind::rmsnorm:
    case OpKind::rmsnorm_backward:
    case OpKind::rope:
    case OpKind::swiglu:
    case OpKind::swiglu_backward:
      return true;
    default:
      return false;
  }
}

struct Lowering {
  const Plan& plan;
  const DeviceQuirks& quirks;
  const TensorSlices& slice_of;
  const LoweringExtras& extras;
  std::vector<Dispatch> out;
  int step_index = -1;  // the Plan::steps index being lowered, stamped on each dispatch

  const Tensor& tensor(TensorId id) const {
    return plan.tensors.at(static_cast<size_t>(id)).tensor;
  }
  BufferSlice at(TensorId id) const { return slice_of(id); }
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
    m.x_dtype = tensor(x).dtype;  // activations may be too (dx, given for a frozen weight's x, is
    m.y_dtype = m.x_dtype;        // f32: dinp's kernel reads neither)
    return m;
  }
  // qkv is [B·T, 3C]; B and T come from the statistics lse[B, NH, T].
  kernels::AttentionShape attention_shape(const Step& s, TensorId qkv, TensorId lse) const {
    return {dim(lse, 0), dim(lse, 2), dim(qkv, -1) / 3, static_cast<uint32_t>(s.attrs.heads)};
  }
  kernels::EmbeddingShape embedding_shape(TensorId tokens, TensorId wte, TensorId wpe) const {
    return {dim(tokens, 0), dim(tokens, 1), dim(wte, 1),
            dim(wte, 0),    dim(wpe, 0),    tensor(wte).dtype};
  }
  kernels::EmbeddingShape embedding_out(kernels::EmbeddingShape s, TensorId x) const {
    s.x_dtype = tensor(x).dtype;
    return s;
  }
  // x is [B, T, heads·D] (graph/llama_builder.h).
  kernels::RopeShape rope_shape(const Step& s, TensorId x) const {
    const uint32_t heads = static_cast<uint32_t>(s.attrs.heads);
    return {dim(x, 0), dim(x, 1), heads, dim(x, -1) / heads, s.attrs.rope_theta};
  }
  kernels::RmsnormShape rmsnorm_shape(const Step& s, TensorId x) const {
    return {count(x) / dim(x, -1), dim(x, -1), s.attrs.eps};
  }
  kernels::DropoutKey dropout_key(const Step& s) const {
    // The step comes from AdamWHyper::step, which the host rewrites before every submission.
    constexpr uint32_t kStepWord = offsetof(push::AdamWHyper, step) / 4;
    return {extras.dropout_seed, 0, s.attrs.dropout_id, extras.adamw_hyper, kStepWord};
  }

  // Operands are read by their schema names (graph/op_schema.h); see docs/ops.md.
  void step(const Step& s) {
    const auto in = [&](std::size_t slot) { return s.inputs.at(slot); };
    const auto out = [&](std::size_t slot) { return s.outputs.at(slot); };
    const auto bin = [&](std::size_t slot) { return at(in(slot)); };
    const auto bout = [&](std::size_t slot) { return at(out(slot)); };
    check_storage(s);
    switch (s.kind) {
      case OpKind::embedding: {
        namespace e = slot::embedding;
        const auto shape = embedding_shape(in(e::tokens), in(e::wte), in(e::wpe));
        if (tensor(in(e::wpe)).dtype != shape.table_dtype)  // one kernel variant reads both
          throw std::logic_error("embedding: wte and wpe are stored in different dtypes");
        return add(kernels::embedding_forward(quirks, embedding_out(shape, out(e::x)),
                                              bin(e::tokens), bin(e::wte), bin(e::wpe), bout(e::x)),
                   s);
      }
      case OpKind::embedding_backward: {
        namespace e = slot::embedding_backward;
        // dwte and dwpe shapes equal wte and wpe.
        const auto shape = embedding_shape(in(e::tokens), out(e::dwte), out(e::dwpe));
        return add(
            kernels::embedding_backward(quirks, shape, bin(e::tokens), bin(e::dx), bout(e::dwte),
                                        bout(e::dwpe), acc(s, e::dwte), acc(s, e::dwpe)),
            s);
      }
      case OpKind::layernorm: {
        namespace l = slot::layernorm;
        const TensorId x = in(l::x);
        kernels::LayernormShape shape{count(x) / dim(x, -1), dim(x, -1), s.attrs.eps};
        return add(kernels::layernorm_forward(quirks, shape, bin(l::x), bin(l::weight),
                                              bin(l::bias), bout(l::y), bout(l::mean),
                                              bout(l::rstd), act({x, out(l::y)})),
                   s);
      }
      case OpKind::layernorm_backward: {
        namespace l = slot::layernorm_backward;
        if (acc(s, l::dweight) != acc(s, l::dbias))
          throw std::logic_error("layernorm_backward: dweight and dbias accumulate differently");
        const TensorId x = in(l::x);
        kernels::LayernormShape shape{count(x) / dim(x, -1), dim(x, -1), s.attrs.eps};
        const bool trained = !s.attrs.frozen;
        return add(kernels::layernorm_backward(quirks, shape, bin(l::dy), bin(l::x), bin(l::weight),
                                               bin(l::mean), bin(l::rstd), bout(l::dx),
                                               trained ? bout(l::dweight) : BufferSlice{},
                                               trained ? bout(l::dbias) : BufferSlice{},
                                               acc(s, l::dx), acc(s, l::dweight), act({x})),
                   s);
      }
      case OpKind::matmul: {
        namespace m = slot::matmul;
        auto shape = matmul_shape(s, in(m::x), in(m::weight));
        shape.y_dtype = act({in(m::x), out(m::y)});
        const BufferSlice bias = s.attrs.has_bias ? bin(m::bias) : BufferSlice{};
        return add(kernels::matmul_forward_pieces(quirks, shape, bin(m::x), bin(m::weight), bias,
                                                  bout(m::y)),
                   s);
      }
      case OpKind::matmul_backward: {
        namespace m = slot::matmul_backward;
        // dx has x's shape; x itself is not an input when the weight is frozen.
        auto shape = matmul_shape(s, out(m::dx), in(m::weight));
        if (!s.attrs.frozen) shape.x_dtype = tensor(in(m::x)).dtype;
        add(kernels::matmul_backward_input_pieces(quirks, shape, bin(m::dy), bin(m::weight),
                                                  bout(m::dx), mode(s, m::dx)),
            s);
        if (s.attrs.frozen) return;
        add(kernels::matmul_backward_weight_pieces(quirks, shape, bin(m::dy), bin(m::x),
                                                   bout(m::dweight), mode(s, m::dweight)),
            s);
        if (s.attrs.has_bias)
          add(kernels::matmul_backward_bias(quirks, shape, bin(m::dy), bout(m::dbias),
                                            mode(s, m::dbias)),
              s);
        return;
      }
      case OpKind::attention: {
        namespace a = slot::attention;
        const auto shape = attention_shape(s, in(a::qkv), out(a::lse));
        return add(kernels::attention_forward(quirks, shape, bin(a::qkv), bout(a::out),
                                              bout(a::lse), act({in(a::qkv), out(a::out)})),
                   s);
      }
      case OpKind::attention_backward: {
        namespace a = slot::attention_backward;
        const auto shape = attention_shape(s, in(a::qkv), in(a::lse));
        return add(kernels::attention_backward(quirks, shape, bin(a::dout), bin(a::qkv),
                                               bin(a::out), bin(a::lse), bout(a::dqkv),
                                               mode(s, a::dqkv), act({in(a::qkv), in(a::out)})),
                   s);
      }
      case OpKind::gelu: {
        namespace g = slot::gelu;
        return add(kernels::gelu_forward(quirks, count(in(g::x)), bin(g::x), bout(g::y),
                                         act({in(g::x), out(g::y)})),
                   s);
      }
      case OpKind::gelu_backward: {
        namespace g = slot::gelu_backward;
        return add(kernels::gelu_backward(quirks, count(in(g::dy)), bin(g::dy), bin(g::x),
                                          bout(g::dx), acc(s, g::dx), act({in(g::x)})),
                   s);
      }
      case OpKind::residual: {
        namespace r = slot::residual;
        return add(
            kernels::residual_forward(quirks, count(in(r::a)), bin(r::a), bin(r::b), bout(r::y),
                                      s.attrs.scale, act({in(r::a), in(r::b), out(r::y)})),
            s);
      }
      case OpKind::residual_backward: {
        namespace r = slot::residual_backward;
        return add(
            kernels::residual_backward(quirks, count(in(r::dy)), bin(r::dy), bout(r::da),
                                       bout(r::db), acc(s, r::da), acc(s, r::db), s.attrs.scale),
            s);
      }
      case OpKind::dropout: {
        namespace d = slot::dropout;
        return add(kernels::dropout_forward(count(in(d::x)), s.attrs.dropout_p, dropout_key(s),
                                            bin(d::x), bout(d::y), act({in(d::x), out(d::y)})),
                   s);
      }
      case OpKind::dropout_backward: {
        namespace d = slot::dropout_backward;
        return add(kernels::dropout_backward(count(in(d::dy)), s.attrs.dropout_p, dropout_key(s),
                                             bin(d::dy), bout(d::dx), acc(s, d::dx)),
                   s);
      }
      case OpKind::cross_entropy: {
        namespace c = slot::cross_entropy;
        const TensorId logits = in(c::logits);
        kernels::CrossEntropyShape shape{count(logits) / dim(logits, -1), dim(logits, -1)};
        return add(kernels::cross_entropy_forward(quirks, shape, bin(c::logits), bin(c::targets),
                                                  bout(c::losses), act({logits})),
                   s);
      }
      case OpKind::cross_entropy_backward: {
        namespace c = slot::cross_entropy_backward;
        const TensorId logits = in(c::logits);
        kernels::CrossEntropyShape shape{count(logits) / dim(logits, -1), dim(logits, -1)};
        // d(mean loss)/dlogits: the mean runs over the trained targets of every micro-batch,
        // a count only the step's data knows, so the scale is read when the kernel runs.
        constexpr uint32_t kScaleWord = offsetof(push::AdamWHyper, loss_scale) / 4;
        return add(kernels::cross_entropy_backward(quirks, shape, bin(c::logits), bin(c::targets),
                                                   bout(c::dlogits),
                                                   {extras.adamw_hyper, kScaleWord}, act({logits})),
                   s);
      }
      case OpKind::token_embedding: {
        namespace e = slot::token_embedding;
        const TensorId wte = in(e::wte);
        const kernels::EmbeddingShape shape{
            dim(in(e::tokens), 0), dim(in(e::tokens), 1), dim(wte, 1), dim(wte, 0), 0,
            tensor(wte).dtype};
        // No position table: an empty wpe slice (runtime/kernels/embedding.h).
        return add(kernels::embedding_forward(quirks, embedding_out(shape, out(e::x)),
                                              bin(e::tokens), bin(e::wte), {}, bout(e::x)),
                   s);
      }
      case OpKind::token_embedding_backward: {
        namespace e = slot::token_embedding_backward;
        const TensorId dwte = out(e::dwte);
        const kernels::EmbeddingShape shape{dim(in(e::tokens), 0), dim(in(e::tokens), 1),
                                            dim(dwte, 1), dim(dwte, 0), 0};
        return add(kernels::embedding_backward(quirks, shape, bin(e::tokens), bin(e::dx),
                                               bout(e::dwte), {}, acc(s, e::dwte), false),
                   s);
      }
      case OpKind::rmsnorm: {
        namespace r = slot::rmsnorm;
        return add(
            kernels::rmsnorm_forward(quirks, rmsnorm_shape(s, in(r::x)), bin(r::x), bin(r::weight),
                                     bout(r::y), bout(r::rstd), act({in(r::x), out(r::y)})),
            s);
      }
      case OpKind::rmsnorm_backward: {
        namespace r = slot::rmsnorm_backward;
        const BufferSlice dw = s.attrs.frozen ? BufferSlice{} : bout(r::dweight);
        return add(
            kernels::rmsnorm_backward(quirks, rmsnorm_shape(s, in(r::x)), bin(r::dy), bin(r::x),
                                      bin(r::weight), bin(r::rstd), bout(r::dx), dw, mode(s, r::dx),
                                      mode(s, r::dweight), act({in(r::x)})),
            s);
      }
      case OpKind::rope: {
        namespace r = slot::rope;
        return add(kernels::rope_forward(rope_shape(s, in(r::x)), bin(r::x), {}, bout(r::y), {},
                                         act({in(r::x), out(r::y)})),
                   s);
      }
      case OpKind::rope_backward: {
        namespace r = slot::rope_backward;
        return add(kernels::rope_backward(rope_shape(s, in(r::dy)), bin(r::dy), {}, bout(r::dx), {},
                                          mode(s, r::dx)),
                   s);
      }
      case OpKind::gqa_attention:
      case OpKind::gqa_attention_backward:
        return gqa_attention(s);
      case OpKind::swiglu: {
        namespace w = slot::swiglu;
        return add(kernels::swiglu_forward(count(in(w::gate)), bin(w::gate), bin(w::up), bout(w::h),
                                           act({in(w::gate), in(w::up), out(w::h)})),
                   s);
      }
      case OpKind::swiglu_backward: {
        namespace w = slot::swiglu_backward;
        return add(kernels::swiglu_backward(count(in(w::dh)), bin(w::dh), bin(w::gate), bin(w::up),
                                            bout(w::dgate), bout(w::dup), mode(s, w::dgate),
                                            mode(s, w::dup), act({in(w::gate), in(w::up)})),
                   s);
      }
      case OpKind::head_loss:
      case OpKind::head_loss_backward:
        return head_loss(s);
      case OpKind::grad_norm:
        return grad_norm(s);
      case OpKind::adamw: {
        namespace a = slot::adamw;
        // param, m and v are updated in place: the outputs are the same tensors as the inputs.
        const BufferSlice clip = extras.grad_clip > 0 ? bin(a::grad_norm) : BufferSlice{};
        return add(kernels::adamw_pieces(quirks, bin(a::param), bin(a::grad), bin(a::m), bin(a::v),
                                         extras.adamw_hyper, clip, count(in(a::param)),
                                         s.attrs.weight_decay),
                   s);
      }
    }
    throw std::logic_error("no lowering for op kind " + std::string(op_kind_name(s.kind)));
  }

  // q is [B, T, NH·D]; B and T come from the statistics lse[B, NH, T].
  kernels::AttentionShape gqa_shape(const Step& s, TensorId q, TensorId lse) const {
    return {dim(lse, 0), dim(lse, 2), dim(q, -1), static_cast<uint32_t>(s.attrs.heads),
            static_cast<uint32_t>(s.attrs.kv_heads)};
  }

  void gqa_attention(const Step& s) {
    const auto at_in = [&](std::size_t slot) { return at(s.inputs.at(slot)); };
    const auto at_out = [&](std::size_t slot) { return at(s.outputs.at(slot)); };
    if (s.kind == OpKind::gqa_attention) {
      namespace a = slot::gqa_attention;
      const auto shape = gqa_shape(s, s.inputs.at(a::q), s.outputs.at(a::lse));
      return add(
          kernels::gqa_attention_forward(
              quirks, shape, at_in(a::q), at_in(a::k), at_in(a::v), at_out(a::out), at_out(a::lse),
              act({s.inputs.at(a::q), s.inputs.at(a::k), s.inputs.at(a::v)})),
          s);
    }
    namespace a = slot::gqa_attention_backward;
    if (acc(s, a::dq) != acc(s, a::dk) || acc(s, a::dq) != acc(s, a::dv))
      throw std::logic_error("gqa_attention_backward: dq, dk and dv accumulate differently");
    const auto shape = gqa_shape(s, s.inputs.at(a::q), s.inputs.at(a::lse));
    add(kernels::gqa_attention_backward(quirks, shape, at_in(a::dout), at_in(a::q), at_in(a::k),
                                        at_in(a::v), at_in(a::out), at_in(a::lse), at_out(a::dq),
                                        at_out(a::dk), at_out(a::dv), mode(s, a::dq),
                                        act({s.inputs.at(a::q), s.inputs.at(a::out)})),
        s);
  }

  // x is [BT, C] and the weight [V, C]; the chunk comes from the attributes.
  kernels::HeadLossShape head_loss_shape(const Step& s, TensorId x, TensorId w) const {
    return {
        count(x) / dim(x, -1), dim(x, -1),     dim(w, 0), static_cast<uint32_t>(s.attrs.chunk_rows),
        tensor(w).dtype,       tensor(x).dtype};
  }

  void head_loss(const Step& s) {
    const auto at_in = [&](std::size_t slot) { return at(s.inputs.at(slot)); };
    const auto at_out = [&](std::size_t slot) { return at(s.outputs.at(slot)); };
    if (s.kind == OpKind::head_loss) {
      namespace h = slot::head_loss;
      const auto shape = head_loss_shape(s, s.inputs.at(h::x), s.inputs.at(h::weight));
      return add(
          kernels::head_loss_forward(quirks, shape, at_in(h::x), at_in(h::weight),
                                     at_in(h::targets), at_out(h::losses), at_out(h::logits)),
          s);
    }
    namespace h = slot::head_loss_backward;
    const auto shape = head_loss_shape(s, s.inputs.at(h::x), s.inputs.at(h::weight));
    constexpr uint32_t kScaleWord = offsetof(push::AdamWHyper, loss_scale) / 4;
    // A frozen head weight has no dweight output: the kernels then write dx only.
    const TensorId dw = operand_or_none(s.outputs, h::dweight);
    add(kernels::head_loss_backward(quirks, shape, at_in(h::x), at_in(h::weight), at_in(h::targets),
                                    at_out(h::dx), dw == kNoTensor ? BufferSlice{} : at(dw),
                                    at_out(h::dlogits), {extras.adamw_hyper, kScaleWord},
                                    mode(s, h::dx), mode(s, h::dweight)),
        s);
  }

  void grad_norm(const Step& s) {
    std::vector<BufferSlice> grads;
    std::vector<uint64_t> counts;
    for (TensorId g : s.inputs) {
      grads.push_back(at(g));
      counts.push_back(count(g));
    }
    add(kernels::grad_norm(quirks, grads, counts, extras.grad_norm_partials, extras.grad_clip,
                           at(s.outputs.at(slot::grad_norm::norm))),
        s);
  }
};

}  // namespace

std::vector<Dispatch> lower_plan(const Plan& plan, const DeviceQuirks& quirks,
                                 const TensorSlices& slice_of, const LoweringExtras& extras,
                                 const LoweringPart& part) {
  using Phases = LoweringPart::Phases;
  Lowering l{plan, quirks, slice_of, extras, {}};
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& s = plan.steps[i];
    l.step_index = static_cast<int>(i);
    const bool optimizer = s.phase == Phase::optimizer;
    if ((part.phases == Phases::forward_backward && optimizer) ||
        (part.phases == Phases::optimizer && !optimizer) ||
        (part.phases == Phases::forward && s.phase != Phase::forward))
      continue;
    if (!part.accumulate_parameter_grads) {
      l.step(s);
      continue;
    }
    Step forced = s;
    for (std::size_t i = 0; i < forced.outputs.size(); ++i)
      if (plan.tensors.at(static_cast<std::size_t>(forced.outputs[i])).tensor.role ==
          Role::parameter_grad) {
        forced.attrs.accumulate.resize(forced.outputs.size(), 0);
        forced.attrs.accumulate[i] = 1;
      }
    l.step(forced);
  }
  return std::move(l.out);
}

std::vector<Dispatch> lower_plan_stand_ins(const Plan& plan, const DeviceQuirks& quirks) {
  auto handle = [](uint64_t i) { return std::bit_cast<VkBuffer>(i + 1); };
  const TensorSlices fake = [&](TensorId id) {
    return BufferSlice{handle(uint64_t(id)), 0, plan.tensors.at(size_t(id)).bytes};
  };
  LoweringExtras extras;
  extras.adamw_hyper = {handle(plan.tensors.size()), 0, sizeof(push::AdamWHyper)};
  extras.grad_norm_partials = {handle(plan.tensors.size() + 1), 0,
                               uint64_t(grad_norm_partials_floats(plan, quirks)) * 4};
  extras.grad_clip = 1;  // binds the norm too
  return lower_plan(plan, quirks, fake, extras);
}

std::optional<OversizedBinding> oversized_binding(const Plan& plan, const DeviceQuirks& quirks) {
  if (quirks.max_binding_bytes == 0) return std::nullopt;
  // Map each binding above the limit back to its tensor. The kernels' own piece logic decides
  // what is split, so this cannot disagree with the real lowering.
  for (const Dispatch& d : lower_plan_stand_ins(plan, quirks))
    for (const Binding& b : d.bindings) {
      const auto i = static_cast<std::size_t>(std::bit_cast<uint64_t>(b.slice.buffer) - 1);
      if (b.slice.size > quirks.max_binding_bytes && i < plan.tensors.size())
        return OversizedBinding{plan.tensors[i].tensor.name, plan.tensors[i].tensor.role,
                                b.slice.size, d.label};
    }
  return std::nullopt;
}

uint32_t grad_norm_partials_floats(const Plan& plan, const DeviceQuirks& quirks) {
  std::vector<uint64_t> counts;
  for (TensorId g : plan.parameter_grads)
    counts.push_back(plan.tensors.at(size_t(g)).tensor.elements());
  return kernels::grad_norm_partials_floats(quirks, counts);
}

}  // namespace remat

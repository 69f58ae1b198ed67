// Each op kind's kernels: the one place an op of the plan becomes dispatches. Operands are read
// by their schema names (graph/op_schema.h, docs/ops.md).
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/lowering_context.h"

namespace remat {

using kernels::GradWrite;

// Operands are read by their schema names (graph/op_schema.h); see docs/ops.md.
void LoweringContext::step(const Step& s) {
  const auto in = [&](std::size_t slot) { return s.inputs.at(slot); };
  const auto out = [&](std::size_t slot) { return s.outputs.at(slot); };
  const auto bin = [&](std::size_t slot) { return at(in(slot)); };
  const auto bout = [&](std::size_t slot) { return at(out(slot)); };
  check_storage(s);
  switch (s.kind) {
    case OpKind::embedding: {
      namespace e = slot::embedding;
      const TensorId wte = in(e::wte);
      if (const Tensor& w = tensor(wte); w.dtype == DType::blocks) {
        if (tensor(in(e::wpe)).dtype != DType::f32)
          throw std::logic_error("embedding: the block gather adds an f32 position table only");
        kernels::EmbeddingBlocksShape shape{count(in(e::tokens)), dim(wte, 1), dim(wte, 0),
                                            w.blocks.ggml_type, dim(in(e::tokens), 1)};
        return add(
            kernels::embedding_blocks_forward(quirks, shape, bin(e::tokens), bin(e::wte),
                                              bout(e::x), bin(e::wpe), positions(s, e::positions)),
            s);
      }
      const auto shape = embedding_shape(in(e::tokens), wte, in(e::wpe));
      if (tensor(in(e::wpe)).dtype != shape.table_dtype)  // one kernel variant reads both
        throw std::logic_error("embedding: wte and wpe are stored in different dtypes");
      return add(kernels::embedding_forward(quirks, embedding_out(shape, out(e::x)), bin(e::tokens),
                                            bin(e::wte), bin(e::wpe), bout(e::x),
                                            positions(s, e::positions)),
                 s);
    }
    case OpKind::embedding_backward: {
      namespace e = slot::embedding_backward;
      // dwte and dwpe shapes equal wte and wpe.
      const auto shape = embedding_shape(in(e::tokens), out(e::dwte), out(e::dwpe));
      return add(kernels::embedding_backward(quirks, shape, bin(e::tokens), bin(e::dx),
                                             bout(e::dwte), bout(e::dwpe), acc(s, e::dwte),
                                             acc(s, e::dwpe), positions(s, e::positions)),
                 s);
    }
    case OpKind::layernorm: {
      namespace l = slot::layernorm;
      const TensorId x = in(l::x);
      kernels::LayernormShape shape{count(x) / dim(x, -1), dim(x, -1), s.attrs.eps};
      return add(
          kernels::layernorm_forward(quirks, shape, bin(l::x), bin(l::weight), bin(l::bias),
                                     bout(l::y), bout(l::mean), bout(l::rstd), act({x, out(l::y)})),
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
      // A fused residual (graph/residual_fusion.h): its last input, added into y.
      const BufferSlice residual = s.attrs.adds_residual ? bin(s.inputs.size() - 1) : BufferSlice{};
      if (const Tensor& w = tensor(in(m::weight)); w.dtype == DType::blocks) {
        auto ds = kernels::matmul_blocks_forward_pieces(
            quirks, shape, w.blocks.ggml_type, bin(m::x), bin(m::weight), bias, bout(m::y));
        if (s.attrs.adds_residual)
          ds = kernels::then_add_residual(quirks, shape, std::move(ds), residual, bout(m::y));
        return add(std::move(ds), s);
      }
      return add(kernels::matmul_forward_pieces(quirks, shape, bin(m::x), bin(m::weight), bias,
                                                bout(m::y), residual),
                 s);
    }
    case OpKind::matmul_backward: {
      namespace m = slot::matmul_backward;
      // dx has x's shape; x itself is not an input when the weight is frozen.
      auto shape = matmul_shape(s, out(m::dx), in(m::weight));
      if (!s.attrs.frozen) shape.x_dtype = tensor(in(m::x)).dtype;
      if (const Tensor& w = tensor(in(m::weight)); w.dtype == DType::blocks)  // always frozen
        return add(kernels::matmul_blocks_backward_input_pieces(quirks, shape, w.blocks.ggml_type,
                                                                bin(m::dy), bin(m::weight),
                                                                bout(m::dx), mode(s, m::dx)),
                   s);
      add(kernels::matmul_backward_input_pieces(quirks, shape, bin(m::dy), bin(m::weight),
                                                bout(m::dx), mode(s, m::dx)),
          s);
      if (s.attrs.frozen) return;
      if (s.attrs.has_bias)
        return add(kernels::matmul_backward_weight_bias_pieces(
                       quirks, shape, bin(m::dy), bin(m::x), bout(m::dweight), mode(s, m::dweight),
                       bout(m::dbias), mode(s, m::dbias)),
                   s);
      return add(kernels::matmul_backward_weight_pieces(quirks, shape, bin(m::dy), bin(m::x),
                                                        bout(m::dweight), mode(s, m::dweight)),
                 s);
    }
    case OpKind::attention: {
      namespace a = slot::attention;
      const auto shape = attention_shape(s, in(a::qkv), out(a::lse));
      return add(
          kernels::attention_forward(quirks, shape, bin(a::qkv), bout(a::out), bout(a::lse),
                                     act({in(a::qkv), out(a::out)}), positions(s, a::positions)),
          s);
    }
    case OpKind::attention_backward: {
      namespace a = slot::attention_backward;
      const auto shape = attention_shape(s, in(a::qkv), in(a::lse));
      return add(
          kernels::attention_backward(quirks, shape, bin(a::dout), bin(a::qkv), bin(a::out),
                                      bin(a::lse), bout(a::dqkv), mode(s, a::dqkv),
                                      act({in(a::qkv), in(a::out)}), positions(s, a::positions)),
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
          kernels::residual_backward(quirks, count(in(r::dy)), bin(r::dy), bout(r::da), bout(r::db),
                                     acc(s, r::da), acc(s, r::db), s.attrs.scale),
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
                                                 bout(c::dlogits), {extras.adamw_hyper, kScaleWord},
                                                 act({logits})),
                 s);
    }
    case OpKind::token_embedding: {
      namespace e = slot::token_embedding;
      const TensorId wte = in(e::wte);
      if (const Tensor& w = tensor(wte); w.dtype == DType::blocks) {
        kernels::EmbeddingBlocksShape shape{count(in(e::tokens)),  dim(wte, 1),
                                            dim(wte, 0),           w.blocks.ggml_type,
                                            dim(in(e::tokens), 1), s.attrs.scale};
        return add(kernels::embedding_blocks_forward(quirks, shape, bin(e::tokens), bin(e::wte),
                                                     bout(e::x)),
                   s);
      }
      kernels::EmbeddingShape shape{
          dim(in(e::tokens), 0), dim(in(e::tokens), 1), dim(wte, 1), dim(wte, 0), 0,
          tensor(wte).dtype};
      shape.scale = s.attrs.scale;
      // No position table: an empty wpe slice (runtime/kernels/embedding.h).
      return add(kernels::embedding_forward(quirks, embedding_out(shape, out(e::x)), bin(e::tokens),
                                            bin(e::wte), {}, bout(e::x)),
                 s);
    }
    case OpKind::token_embedding_backward: {
      namespace e = slot::token_embedding_backward;
      const TensorId dwte = out(e::dwte);
      kernels::EmbeddingShape shape{dim(in(e::tokens), 0), dim(in(e::tokens), 1), dim(dwte, 1),
                                    dim(dwte, 0), 0};
      shape.scale = s.attrs.scale;
      return add(kernels::embedding_backward(quirks, shape, bin(e::tokens), bin(e::dx),
                                             bout(e::dwte), {}, acc(s, e::dwte), false),
                 s);
    }
    case OpKind::rmsnorm: {
      namespace r = slot::rmsnorm;
      return add(kernels::rmsnorm_forward(
                     quirks, rmsnorm_shape(s, in(r::x), out(r::y), in(r::weight)), bin(r::x),
                     bin(r::weight), bout(r::y), bout(r::rstd), act({in(r::x), out(r::y)})),
                 s);
    }
    case OpKind::rmsnorm_backward: {
      namespace r = slot::rmsnorm_backward;
      const BufferSlice dw = s.attrs.frozen ? BufferSlice{} : bout(r::dweight);
      return add(kernels::rmsnorm_backward(
                     quirks, rmsnorm_shape(s, in(r::x), in(r::dy), in(r::weight)), bin(r::dy),
                     bin(r::x), bin(r::weight), bin(r::rstd), bout(r::dx), dw, mode(s, r::dx),
                     mode(s, r::dweight), act({in(r::x)})),
                 s);
    }
    case OpKind::rope: {
      namespace r = slot::rope;
      return add(kernels::rope_forward(rope_shape(s, in(r::x)), bin(r::x), {}, bout(r::y), {},
                                       act({in(r::x), out(r::y)}), positions(s, r::positions)),
                 s);
    }
    case OpKind::rope_backward: {
      namespace r = slot::rope_backward;
      return add(kernels::rope_backward(rope_shape(s, in(r::dy)), bin(r::dy), {}, bout(r::dx), {},
                                        mode(s, r::dx), positions(s, r::positions)),
                 s);
    }
    case OpKind::gqa_attention:
    case OpKind::gqa_attention_backward:
      return gqa_attention(s);
    case OpKind::swiglu: {
      namespace w = slot::swiglu;
      return add(
          kernels::swiglu_forward(count(in(w::gate)), bin(w::gate), bin(w::up), bout(w::h),
                                  act({in(w::gate), in(w::up), out(w::h)}), s.attrs.gelu_gate),
          s);
    }
    case OpKind::swiglu_backward: {
      namespace w = slot::swiglu_backward;
      return add(
          kernels::swiglu_backward(count(in(w::dh)), bin(w::dh), bin(w::gate), bin(w::up),
                                   bout(w::dgate), bout(w::dup), mode(s, w::dgate), mode(s, w::dup),
                                   act({in(w::gate), in(w::up)}), s.attrs.gelu_gate),
          s);
    }
    case OpKind::head_loss:
    case OpKind::head_loss_backward:
      return head_loss(s);
    case OpKind::grad_norm:
      return grad_norm(s);
    case OpKind::adamw:
      return adamw(s);
    // Qwen3.5's ops (runtime/op_lowering_qwen35.cpp).
    case OpKind::causal_conv1d:
    case OpKind::causal_conv1d_backward:
    case OpKind::l2norm:
    case OpKind::l2norm_backward:
    case OpKind::gdn_gates:
    case OpKind::gdn_gates_backward:
    case OpKind::gated_rmsnorm:
    case OpKind::gated_rmsnorm_backward:
    case OpKind::sigmoid_gate:
    case OpKind::sigmoid_gate_backward:
    case OpKind::gated_delta_state:
    case OpKind::gated_delta_rule:
    case OpKind::gated_delta_rule_backward:
      return qwen35(s);
  }
  throw std::logic_error("no lowering for op kind " + std::string(op_kind_name(s.kind)));
}

// q is [B, T, NH·D]; B and T come from the statistics lse[B, NH, T].
kernels::AttentionShape LoweringContext::gqa_shape(const Step& s, TensorId q, TensorId lse) const {
  return {dim(lse, 0),
          dim(lse, 2),
          dim(q, -1),
          static_cast<uint32_t>(s.attrs.heads),
          static_cast<uint32_t>(s.attrs.kv_heads),
          window(s),
          s.attrs.attn_scale};
}

void LoweringContext::gqa_attention(const Step& s) {
  const auto at_in = [&](std::size_t slot) { return at(s.inputs.at(slot)); };
  const auto at_out = [&](std::size_t slot) { return at(s.outputs.at(slot)); };
  if (s.kind == OpKind::gqa_attention) {
    namespace a = slot::gqa_attention;
    const auto shape = gqa_shape(s, s.inputs.at(a::q), s.outputs.at(a::lse));
    return add(kernels::gqa_attention_forward(
                   quirks, shape, at_in(a::q), at_in(a::k), at_in(a::v), at_out(a::out),
                   at_out(a::lse), act({s.inputs.at(a::q), s.inputs.at(a::k), s.inputs.at(a::v)}),
                   positions(s, a::positions)),
               s);
  }
  namespace a = slot::gqa_attention_backward;
  if (acc(s, a::dq) != acc(s, a::dk) || acc(s, a::dq) != acc(s, a::dv))
    throw std::logic_error("gqa_attention_backward: dq, dk and dv accumulate differently");
  const auto shape = gqa_shape(s, s.inputs.at(a::q), s.inputs.at(a::lse));
  add(kernels::gqa_attention_backward(
          quirks, shape, at_in(a::dout), at_in(a::q), at_in(a::k), at_in(a::v), at_in(a::out),
          at_in(a::lse), at_out(a::dq), at_out(a::dk), at_out(a::dv), mode(s, a::dq),
          act({s.inputs.at(a::q), s.inputs.at(a::out)}), positions(s, a::positions)),
      s);
}

// x is [BT, C] and the weight [V, C]; the chunk comes from the attributes.
kernels::HeadLossShape LoweringContext::head_loss_shape(const Step& s, TensorId x,
                                                        TensorId w) const {
  kernels::HeadLossShape shape{
      count(x) / dim(x, -1), dim(x, -1),     dim(w, 0), static_cast<uint32_t>(s.attrs.chunk_rows),
      tensor(w).dtype,       tensor(x).dtype};
  if (tensor(w).dtype == DType::blocks) {  // a QLoRA base's head: the block matmuls read it
    shape.w_dtype = DType::f32;
    shape.w_block_type = tensor(w).blocks.ggml_type;
  }
  return shape;
}

void LoweringContext::head_loss(const Step& s) {
  const auto at_in = [&](std::size_t slot) { return at(s.inputs.at(slot)); };
  const auto at_out = [&](std::size_t slot) { return at(s.outputs.at(slot)); };
  if (s.kind == OpKind::head_loss) {
    namespace h = slot::head_loss;
    const auto shape = head_loss_shape(s, s.inputs.at(h::x), s.inputs.at(h::weight));
    return add(kernels::head_loss_forward(quirks, shape, at_in(h::x), at_in(h::weight),
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

void LoweringContext::adamw(const Step& s) {
  namespace a = slot::adamw;
  const BufferSlice clip = extras.grad_clip > 0 ? bin_of(s, a::grad_norm) : BufferSlice{};
  if (table) {
    // The first AdamW step updates every parameter; the others have nothing left to do.
    if (std::exchange(adamw_table_done, true)) return;
    const std::size_t first = out.size();
    add(kernels::adamw_table(*table, extras.optimizer_table, extras.adamw_hyper, clip), s);
    // Timings carry this step's index, but the dispatches update every parameter.
    for (std::size_t i = first; i < out.size(); ++i) out[i].label = "adamw (all parameters)";
    return;
  }
  // param, m and v are updated in place: the outputs are the same tensors as the inputs.
  add(kernels::adamw_pieces(quirks, bin_of(s, a::param), bin_of(s, a::grad), bin_of(s, a::m),
                            bin_of(s, a::v), extras.adamw_hyper, clip, count(s.inputs.at(a::param)),
                            s.attrs.weight_decay),
      s);
}

void LoweringContext::grad_norm(const Step& s) {
  const BufferSlice result = at(s.outputs.at(slot::grad_norm::norm));
  if (table)
    return add(kernels::grad_norm_table(quirks, *table, extras.optimizer_table,
                                        extras.grad_norm_partials, extras.grad_clip, result),
               s);
  std::vector<BufferSlice> grads;
  std::vector<uint64_t> counts;
  for (TensorId g : s.inputs) {
    grads.push_back(at(g));
    counts.push_back(count(g));
  }
  add(kernels::grad_norm(quirks, grads, counts, extras.grad_norm_partials, extras.grad_clip,
                         result),
      s);
}

}  // namespace remat

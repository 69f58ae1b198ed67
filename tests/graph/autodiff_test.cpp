// Autodiff: one backward op per forward op, reverse order, accumulate flags per docs/ops.md
// (first contribution overwrites), the tied dwte written first by the head, then the optimizer.
#include <catch2/catch.hpp>

#include <map>

#include "graph/autodiff.h"

namespace remat {
namespace {

const Op& op_at(const Graph& g, int i) {
  return g.ops[static_cast<size_t>(i)];
}

}  // namespace

TEST_CASE("autodiff: every forward op has one backward op, blocks in reverse order") {
  const Graph g = build_training_gpt(ModelConfig::preset("tiny"), TrainShape{});
  for (const Block& b : g.blocks) {
    REQUIRE(b.backward_ops.size() == b.forward_ops.size());
    for (size_t i = 0; i < b.forward_ops.size(); ++i) {
      const Op& bwd = op_at(g, b.backward_ops[i]);
      CHECK(bwd.forward_op == b.forward_ops[b.forward_ops.size() - 1 - i]);
      CHECK(is_backward_kind(bwd.kind));
    }
  }
}

TEST_CASE("autodiff: first write overwrites, later writes accumulate, in backward order") {
  TrainShape s;
  s.dropout = 0.1f;
  const Graph g = build_training_gpt(ModelConfig::preset("tiny"), s);
  std::map<TensorId, int> writes;
  for (auto b = g.blocks.rbegin(); b != g.blocks.rend(); ++b)
    for (int i : b->backward_ops) {
      const Op& op = op_at(g, i);
      REQUIRE(op.attrs.accumulate.size() == op.outputs.size());
      for (size_t k = 0; k < op.outputs.size(); ++k)
        CHECK(op.attrs.accumulate[k] == (writes[op.outputs[k]]++ > 0 ? 1 : 0));
    }
  // The residual stream's gradient gets two contributions per block input (residual, layernorm).
  const TensorId dx1 = g.grad_of[static_cast<size_t>(g.blocks[1].input)];
  CHECK(writes[dx1] == 2);
}

TEST_CASE("autodiff: tied wte gets the head's gradient first, then the embedding's") {
  const Graph g = build_training_gpt(ModelConfig::preset("tiny"), TrainShape{});
  const TensorId dwte = g.parameter_grads.front();
  REQUIRE(g.tensor(dwte).name == "grad.wte.weight");
  const Op& head_bwd = op_at(g, g.blocks.back().backward_ops[1]);
  REQUIRE(head_bwd.kind == OpKind::matmul_backward);
  CHECK(head_bwd.outputs[1] == dwte);
  CHECK(head_bwd.attrs.accumulate[1] == 0);
  CHECK(head_bwd.attrs.w_layout == WeightLayout::out_in);
  const Op& emb_bwd = op_at(g, g.blocks.front().backward_ops.back());
  REQUIRE(emb_bwd.kind == OpKind::embedding_backward);
  CHECK(emb_bwd.outputs[0] == dwte);
  CHECK(emb_bwd.attrs.accumulate[0] == 1);
  CHECK(emb_bwd.attrs.accumulate[1] == 0);  // dwpe
}

TEST_CASE("autodiff: optimizer is grad_norm over all grads, then adamw per parameter") {
  const Graph g = build_training_gpt(ModelConfig::preset("tiny"), TrainShape{});
  REQUIRE(g.optimizer_ops.size() == 1 + g.parameters.size());
  const Op& norm = op_at(g, g.optimizer_ops[0]);
  CHECK(norm.kind == OpKind::grad_norm);
  CHECK(norm.inputs == g.parameter_grads);
  for (size_t i = 0; i < g.parameters.size(); ++i) {
    const Op& a = op_at(g, g.optimizer_ops[i + 1]);
    CHECK(a.kind == OpKind::adamw);
    CHECK(a.inputs == std::vector<TensorId>{g.parameters[i], g.parameter_grads[i], g.adam_m[i],
                                            g.adam_v[i], norm.outputs[0]});
    CHECK(a.outputs == std::vector<TensorId>{g.parameters[i], g.adam_m[i], g.adam_v[i]});
    CHECK(a.attrs.weight_decay == (g.tensor(g.parameters[i]).shape.size() == 2));
    CHECK(g.tensor(g.adam_m[i]).role == Role::optimizer_state);
  }
}

TEST_CASE("autodiff: attention backward reads dout, qkv, out, lse and keeps the head count") {
  const Graph g = build_training_gpt(ModelConfig::preset("tiny"), TrainShape{});
  for (const Op& op : g.ops)
    if (op.kind == OpKind::attention_backward) {
      const Op& f = op_at(g, op.forward_op);
      CHECK(op.inputs == std::vector<TensorId>{g.grad_of[static_cast<size_t>(f.outputs[0])],
                                               f.inputs[0], f.outputs[0], f.outputs[1]});
      CHECK(op.attrs.heads == 4);
    }
}

}  // namespace remat

// Autodiff: one backward op per forward op, reverse order, accumulate flags per docs/ops.md
// (first contribution overwrites), the tied dwte written first by the head, then the optimizer.
#include <catch2/catch.hpp>

#include <map>

#include "graph/autodiff.h"
#include "graph/model_builder.h"
#include "graph/op_schema.h"
#include "tests/graph/random_llama.h"
#include "tests/graph/windowed_llama.h"

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

TEST_CASE("autodiff: llama rules, one backward per forward op, first write overwrites") {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const auto c = testing::random_llama(seed);
    INFO("seed " << seed);
    const Graph g = build_training_model(c.model, c.shape);
    std::map<TensorId, int> writes;
    for (auto b = g.blocks.rbegin(); b != g.blocks.rend(); ++b) {
      REQUIRE(b->backward_ops.size() == b->forward_ops.size());
      for (int i : b->backward_ops) {
        const Op& op = op_at(g, i);
        CHECK(is_backward_kind(op.kind));
        for (size_t k = 0; k < op.outputs.size(); ++k)
          CHECK(op.attrs.accumulate.at(k) == (writes[op.outputs[k]]++ > 0 ? 1 : 0));
      }
    }
    // Tied: the head writes d(embed_tokens) first, the embedding adds to it.
    const TensorId dwte = g.parameter_grads.front();
    CHECK(writes[dwte] == (c.model.tied_head ? 2 : 1));
  }
}

TEST_CASE("autodiff: grouped-query attention, RoPE, RMSNorm and SwiGLU backward operands") {
  const Graph g = build_training_model(ModelConfig::preset("llama-tiny"), TrainShape{2, 8});
  const auto d = [&](TensorId t) { return g.grad_of[static_cast<size_t>(t)]; };
  int seen = 0;
  for (const Op& op : g.ops) {
    if (op.forward_op < 0) continue;
    const Op& f = op_at(g, op.forward_op);
    switch (op.kind) {
      case OpKind::gqa_attention_backward:
        CHECK(op.inputs == std::vector<TensorId>{d(f.outputs[0]), f.inputs[0], f.inputs[1],
                                                 f.inputs[2], f.outputs[0], f.outputs[1]});
        CHECK(op.outputs == std::vector<TensorId>{d(f.inputs[0]), d(f.inputs[1]), d(f.inputs[2])});
        CHECK(op.attrs.accumulate == std::vector<uint8_t>{0, 0, 0});
        CHECK(op.attrs.kv_heads == 2);
        ++seen;
        break;
      case OpKind::rope_backward:
        CHECK(op.inputs == std::vector<TensorId>{d(f.outputs[0])});
        CHECK(op.outputs == std::vector<TensorId>{d(f.inputs[0])});
        CHECK(op.attrs.heads == f.attrs.heads);
        ++seen;
        break;
      case OpKind::rmsnorm_backward:
        CHECK(op.inputs ==
              std::vector<TensorId>{d(f.outputs[0]), f.inputs[0], f.inputs[1], f.outputs[1]});
        // In a layer after the residual's contribution; the final norm's is the first.
        CHECK(op.attrs.accumulate[slot::rmsnorm_backward::dx] ==
              (op.block + 1 < static_cast<int>(g.blocks.size()) ? 1 : 0));
        ++seen;
        break;
      case OpKind::swiglu_backward:
        CHECK(op.inputs == std::vector<TensorId>{d(f.outputs[0]), f.inputs[0], f.inputs[1]});
        CHECK(op.outputs == std::vector<TensorId>{d(f.inputs[0]), d(f.inputs[1])});
        ++seen;
        break;
      case OpKind::token_embedding_backward:
        CHECK(op.outputs == std::vector<TensorId>{g.parameter_grads.front()});
        ++seen;
        break;
      default:
        break;
    }
  }
  CHECK(seen == 4 + 8 + 9 + 4 + 1);
}

TEST_CASE("autodiff: attention backwards keep their forward's sliding window and score scale") {
  const Graph g = testing::windowed_llama(TrainShape{2, 16}, 3, 0.125f);
  int seen = 0;
  for (const Op& op : g.ops) {
    if (op.kind != OpKind::gqa_attention_backward) continue;
    const Op& f = op_at(g, op.forward_op);
    CHECK(f.attrs.window == 3 + op.block - 1);  // block 0 is the embedding
    CHECK(op.attrs.window == f.attrs.window);
    CHECK(op.attrs.attn_scale == 0.125f);
    ++seen;
  }
  CHECK(seen == ModelConfig::preset("llama-tiny").layers);
  // GPT-2's multi-head attention carries them the same way.
  Graph gpt = build_model(ModelConfig::preset("tiny"), TrainShape{});
  for (Op& op : gpt.ops)
    if (op.kind == OpKind::attention) op.attrs.window = 7, op.attrs.attn_scale = 0.5f;
  autodiff(gpt);
  for (const Op& op : gpt.ops)
    if (op.kind == OpKind::attention_backward) {
      CHECK(op.attrs.window == 7);
      CHECK(op.attrs.attn_scale == 0.5f);
    }
}

}  // namespace remat

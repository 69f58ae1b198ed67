// Autodiff: one backward op per forward op, reverse order, accumulate flags per docs/ops.md
// (first contribution overwrites), the tied dwte written first by the head, then the optimizer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <tuple>

#include "graph/autodiff.h"
#include "graph/delta_rule_workspace.h"
#include "graph/model_builder.h"
#include "graph/op_schema.h"
#include "tests/graph/random_llama.h"
#include "tests/graph/random_qwen35.h"
#include "tests/graph/windowed_llama.h"

namespace remat {
namespace {

const Op& op_at(const Graph& g, int i) {
  return g.ops[static_cast<size_t>(i)];
}

}  // namespace

// A block's forward ops that get a backward op: all but the residuals, whose gradient is
// forwarded (their inputs' gradients are dy's tensor itself).
static std::vector<int> differentiated(const Graph& g, const Block& b) {
  std::vector<int> ops;
  for (int i : b.forward_ops)
    if (op_at(g, i).kind != OpKind::residual) ops.push_back(i);
  return ops;
}

TEST_CASE("autodiff: every forward op but a residual has one backward op, in reverse order") {
  const Graph g = build_training_gpt(ModelConfig::preset("tiny"), TrainShape{});
  for (const Block& b : g.blocks) {
    const std::vector<int> fwd = differentiated(g, b);
    REQUIRE(b.backward_ops.size() == fwd.size());
    for (size_t i = 0; i < fwd.size(); ++i) {
      const Op& bwd = op_at(g, b.backward_ops[i]);
      CHECK(bwd.forward_op == fwd[fwd.size() - 1 - i]);
      CHECK(is_backward_kind(bwd.kind));
    }
  }
}

TEST_CASE("autodiff: a residual's inputs share its output's gradient unless LoRA scales one") {
  for (double alpha : {4.0, 8.0}) {  // rank 4: merge scale 1 (forwarded), then 2 (a backward op)
    LoraSpec lora;
    lora.rank = 4;
    lora.alpha = alpha;
    TrainShape apart;  // residual ops as built: none fused into its matmul
    apart.fuse_residuals = false;
    const Graph g = build_training_model(ModelConfig::preset("tiny"), apart, lora);
    int forwarded = 0, kept = 0;
    for (const Block& b : g.blocks)
      for (int i : b.forward_ops) {
        const Op& f = op_at(g, i);
        if (f.kind != OpKind::residual) continue;
        const TensorId dy = g.grad_of[static_cast<size_t>(f.outputs[0])];
        const bool shared = g.grad_of[static_cast<size_t>(f.inputs[0])] == dy &&
                            g.grad_of[static_cast<size_t>(f.inputs[1])] == dy;
        const bool has_backward = std::any_of(g.ops.begin(), g.ops.end(), [&](const Op& o) {
          return o.kind == OpKind::residual_backward && o.forward_op == i;
        });
        CHECK(shared != has_backward);
        CHECK(shared == (f.attrs.scale == 1.0f));
        ++(shared ? forwarded : kept);
      }
    // 8 residual-stream adds, and 16 LoRA merges (four projections in each of 4 blocks).
    CHECK(forwarded == (alpha == 4.0 ? 24 : 8));
    CHECK(kept == (alpha == 4.0 ? 0 : 16));
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
  // The residual stream's gradient is one tensor, forwarded through every residual: ln_f's
  // backward writes it, then each block's two layernorms add to it.
  const TensorId stream = g.grad_of[static_cast<size_t>(g.blocks.back().input)];
  for (size_t b = 1; b < g.blocks.size(); ++b)
    CHECK(g.grad_of[static_cast<size_t>(g.blocks[b].input)] == stream);
  CHECK(writes[stream] == 1 + 2 * 4);
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

TEST_CASE(
    "autodiff: llama rules, one backward per forward op but residuals, first write overwrites") {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const auto c = testing::random_llama(seed);
    INFO("seed " << seed);
    const Graph g = build_training_model(c.model, c.shape);
    std::map<TensorId, int> writes;
    for (auto b = g.blocks.rbegin(); b != g.blocks.rend(); ++b) {
      REQUIRE(b->backward_ops.size() == differentiated(g, *b).size());
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

namespace remat {

TEST_CASE("autodiff: Qwen3.5's ops each get one backward but the chunk states' op") {
  const testing::Qwen35Case c = testing::tiny_qwen35(64);
  const Graph g = build_training_model(c.model, c.shape);
  for (const Block& b : g.blocks) {
    std::vector<int> fwd;
    for (int i : b.forward_ops)
      if (op_at(g, i).kind != OpKind::residual && op_at(g, i).kind != OpKind::gated_delta_state)
        fwd.push_back(i);
    INFO(b.name);
    REQUIRE(b.backward_ops.size() == fwd.size());
    for (size_t i = 0; i < fwd.size(); ++i)
      CHECK(op_at(g, b.backward_ops[i]).forward_op == fwd[fwd.size() - 1 - i]);
  }
  // The states are a checkpoint of the rule's recurrence: read by its backward, no gradient.
  for (const Op& op : g.ops) {
    if (op.kind != OpKind::gated_delta_rule_backward) continue;
    const Op& f = g.ops[static_cast<size_t>(op.forward_op)];
    const TensorId states = f.inputs.at(slot::gated_delta_rule::states);
    CHECK(op.inputs.at(slot::gated_delta_rule_backward::states) == states);
    CHECK(g.grad_of[static_cast<size_t>(states)] == kNoTensor);
    const Tensor& ws = g.tensor(op.outputs.at(slot::gated_delta_rule_backward::workspace));
    CHECK(ws.role == Role::workspace);
    // Sized for one chunk of L 64 at B 2, Hv 4, dk 8, dv 6 (graph/delta_rule_workspace.h).
    CHECK(ws.shape ==
          std::vector<int64_t>{int64_t(delta_rule_workspace_layout({2, 4, 8, 6, 64}).bytes / 4)});
  }
}

TEST_CASE("autodiff: a gradient written in parts overwrites each part once") {
  const testing::Qwen35Case c = testing::tiny_qwen35();
  const Graph g = build_training_model(c.model, c.shape);
  // Per gradient tensor: the (kind, output slot, accumulate flag) of each write.
  std::map<TensorId, std::vector<std::tuple<OpKind, size_t, int>>> writes;
  for (const Op& op : g.ops)
    if (is_backward_kind(op.kind))
      for (size_t s = 0; s < op.outputs.size(); ++s)
        writes[op.outputs[s]].emplace_back(op.kind, s, op.attrs.accumulate.at(s));
  int conv_grads = 0, qproj_grads = 0;
  for (const Op& f : g.ops) {
    if (f.kind == OpKind::causal_conv1d) {
      const TensorId d = g.grad_of[static_cast<size_t>(f.outputs.at(0))];
      using W = std::tuple<OpKind, size_t, int>;
      // q's and k's norms and the recurrence's dv, each at its own place: all overwrite.
      CHECK(writes[d] == std::vector<W>{{OpKind::gated_delta_rule_backward, 2, 0},
                                        {OpKind::l2norm_backward, 0, 0},
                                        {OpKind::l2norm_backward, 0, 0}});
      ++conv_grads;
    }
    if (f.kind == OpKind::sigmoid_gate) {
      const TensorId d = g.grad_of[static_cast<size_t>(f.inputs.at(slot::sigmoid_gate::gate))];
      using W = std::tuple<OpKind, size_t, int>;
      // The gate half from the gate's backward, the query half from q_norm's: both overwrite.
      CHECK(writes[d] == std::vector<W>{{OpKind::sigmoid_gate_backward, 1, 0},
                                        {OpKind::rmsnorm_backward, 0, 0}});
      ++qproj_grads;
    }
  }
  CHECK(conv_grads == 3);
  CHECK(qproj_grads == 1);
}

}  // namespace remat

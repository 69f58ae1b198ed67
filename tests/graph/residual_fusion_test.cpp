// The residual fusion pass (graph/residual_fusion.h): which residuals join their matmul, which
// stay (dropout between them, LoRA's scaled merges, the switch off), and what the fused matmul
// reads, writes and hands its backward.
#include <catch2/catch.hpp>

#include "graph/model_builder.h"
#include "graph/op_schema.h"
#include "graph/residual_fusion.h"

namespace remat {
namespace {

struct Counts {
  int fused = 0;      // forward matmuls with a residual
  int residuals = 0;  // residual ops left
};

Counts count(const Graph& g) {
  Counts c;
  for (const Block& b : g.blocks)
    for (int i : b.forward_ops) {
      const Op& o = g.ops[static_cast<size_t>(i)];
      c.fused += o.kind == OpKind::matmul && o.attrs.adds_residual;
      c.residuals += o.kind == OpKind::residual;
    }
  return c;
}

LoraSpec lora(double alpha) {
  LoraSpec s;
  s.rank = 4;
  s.alpha = alpha;
  return s;
}

}  // namespace

TEST_CASE(
    "residual fusion: GPT-2's projections take their residuals, the stream keeps one tensor") {
  const Graph g = build_training_model(ModelConfig::preset("tiny"), TrainShape{});
  const Counts c = count(g);
  CHECK(c.fused == 8);  // attn.c_proj and mlp.c_proj in each of 4 blocks
  CHECK(c.residuals == 0);
  for (const Block& b : g.blocks)
    for (int i : b.forward_ops) {
      const Op& o = g.ops[static_cast<size_t>(i)];
      if (o.kind != OpKind::matmul || !o.attrs.adds_residual) continue;
      INFO(g.tensor(o.outputs[0]).name);
      CHECK(check_operand_arity(o.kind, o.attrs, o.inputs.size(), o.outputs.size()).empty());
      // y is the former residual's output; its gradient is the residual input's too.
      CHECK(g.tensor(o.outputs[0]).name.find(".residual") != std::string::npos);
      const TensorId dy = g.grad_of[static_cast<size_t>(o.outputs[0])];
      CHECK(g.grad_of[static_cast<size_t>(matmul_residual(o))] == dy);
    }
}

TEST_CASE("residual fusion: what stays apart") {
  TrainShape dropout;
  dropout.dropout = 0.1f;  // b is the dropout's output, not the matmul's
  CHECK(count(build_training_model(ModelConfig::preset("tiny"), dropout)).fused == 0);
  TrainShape off;
  off.fuse_residuals = false;
  const Counts none = count(build_training_model(ModelConfig::preset("tiny"), off));
  CHECK(none.fused == 0);
  CHECK(none.residuals == 8);
  // LoRA: the merges y + scale·v fuse into lora_B only at scale 1; the stream residuals add a
  // merge's output, not a matmul's, and stay.
  const Counts scaled = count(build_training_model(ModelConfig::preset("tiny"), {}, lora(8)));
  CHECK(scaled.fused == 0);
  CHECK(scaled.residuals == 8 + 16);
  const Counts unit = count(build_training_model(ModelConfig::preset("tiny"), {}, lora(4)));
  CHECK(unit.fused == 16);
  CHECK(unit.residuals == 8);
}

TEST_CASE("residual fusion: the Llama family's o_proj and down_proj take theirs") {
  const ModelConfig m = ModelConfig::preset("llama-tiny");
  const Graph g = build_training_model(m, TrainShape{});
  const Counts c = count(g);
  CHECK(c.fused == 2 * m.layers);
  CHECK(c.residuals == 0);
}

}  // namespace remat

// The Qwen3.5 graph: parameters as ModelConfig counts them and as Hugging Face names them, each
// layer kind's ops and shapes, the delta rule's chunk states, packing, LoRA, and autodiff on
// generated configs.
#include "graph/qwen35_builder.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "graph/autodiff.h"
#include "graph/delta_rule_workspace.h"
#include "graph/model_builder.h"
#include "graph/op_schema.h"
#include "tests/graph/random_qwen35.h"

namespace remat {
namespace {

uint64_t graph_parameters(const Graph& g) {
  uint64_t n = 0;
  for (TensorId p : g.parameters) n += static_cast<uint64_t>(g.tensor(p).elements());
  for (TensorId p : g.frozen) n += static_cast<uint64_t>(g.tensor(p).elements());
  return n;
}

std::map<OpKind, int> kinds_in(const Graph& g, const Block& b) {
  std::map<OpKind, int> n;
  for (int i : b.forward_ops) ++n[g.ops[static_cast<size_t>(i)].kind];
  return n;
}

const Tensor& named(const Graph& g, const std::string& name) {
  for (const Tensor& t : g.tensors)
    if (t.name == name) return t;
  FAIL("no tensor " << name);
  return g.tensors.front();
}

const Op& only_op(const Graph& g, const Block& b, OpKind kind) {
  for (int i : b.forward_ops)
    if (g.ops[static_cast<size_t>(i)].kind == kind) return g.ops[static_cast<size_t>(i)];
  FAIL("no " << op_kind_name(kind) << " in " << b.name);
  return g.ops.front();
}

}  // namespace

TEST_CASE("qwen35 graph: parameter count equals ModelConfig's for the presets") {
  for (const char* name : {"qwen3.5-0.8b", "qwen3.5-2b"}) {
    INFO(name);
    const ModelConfig m = ModelConfig::preset(name);
    const Graph g = build_model(m, TrainShape{1, 64});
    CHECK(graph_parameters(g) == m.parameter_count());
    CHECK(g.blocks.size() == static_cast<size_t>(m.layers + 2));
  }
  const testing::Qwen35Case c = testing::tiny_qwen35();
  ModelConfig untied = c.model;
  untied.tied_head = false;
  CHECK(graph_parameters(build_model(untied, c.shape)) == untied.parameter_count());
}

TEST_CASE("qwen35 graph: Gated DeltaNet and gated attention layers, Hugging Face's names") {
  const testing::Qwen35Case c = testing::tiny_qwen35();
  const Graph g = build_model(c.model, c.shape);
  const Qwen35Layers& l = c.model.qwen35_layers;
  const int64_t key = l.linear_key_heads * l.linear_key_head_dim;        // 2 x 8
  const int64_t value = l.linear_value_heads * l.linear_value_head_dim;  // 4 x 6
  for (int i = 0; i < c.model.layers; ++i) {
    const Block& b = g.blocks[static_cast<size_t>(i + 1)];
    const std::map<OpKind, int> n = kinds_in(g, b);
    const auto count = [&](OpKind k) { return n.count(k) ? n.at(k) : 0; };
    INFO(b.name);
    if (c.model.linear_attention_layer(i)) {
      CHECK(count(OpKind::causal_conv1d) == 1);
      CHECK(count(OpKind::l2norm) == 2);
      CHECK(count(OpKind::gdn_gates) == 1);
      CHECK(count(OpKind::gated_delta_rule) == 1);
      CHECK(count(OpKind::gated_delta_state) == 0);  // one chunk: no state tensor
      CHECK(count(OpKind::gated_rmsnorm) == 1);
      CHECK(count(OpKind::sigmoid_gate) == 0);
      CHECK(count(OpKind::matmul) == 8);  // qkv, z, a, b, out_proj, gate, up, down
    } else {
      CHECK(count(OpKind::sigmoid_gate) == 1);
      CHECK(count(OpKind::gqa_attention) == 1);
      CHECK(count(OpKind::causal_conv1d) == 0);
      CHECK(count(OpKind::rmsnorm) == 4);  // input, q, k, post-attention
    }
  }
  const std::string p = "model.layers.0.linear_attn.";
  CHECK(named(g, p + "in_proj_qkv.weight").shape == std::vector<int64_t>{2 * key + value, 32});
  CHECK(named(g, p + "in_proj_z.weight").shape == std::vector<int64_t>{value, 32});
  CHECK(named(g, p + "in_proj_a.weight").shape == std::vector<int64_t>{4, 32});
  CHECK(named(g, p + "in_proj_b.weight").shape == std::vector<int64_t>{4, 32});
  CHECK(named(g, p + "conv1d.weight").shape == std::vector<int64_t>{2 * key + value, 4});
  CHECK(named(g, p + "A_log").shape == std::vector<int64_t>{4});
  CHECK(named(g, p + "dt_bias").shape == std::vector<int64_t>{4});
  CHECK(named(g, p + "norm.weight").shape == std::vector<int64_t>{6});
  CHECK(named(g, p + "out_proj.weight").shape == std::vector<int64_t>{32, value});
  const std::string a = "model.layers.3.self_attn.";
  CHECK(named(g, a + "q_proj.weight").shape == std::vector<int64_t>{2 * 2 * 16, 32});
  CHECK(named(g, a + "k_proj.weight").shape == std::vector<int64_t>{16, 32});
  CHECK(named(g, a + "q_norm.weight").shape == std::vector<int64_t>{16});
  CHECK(named(g, a + "o_proj.weight").shape == std::vector<int64_t>{32, 32});
}

TEST_CASE("qwen35 graph: the layers' attributes follow the config") {
  const testing::Qwen35Case c = testing::tiny_qwen35();
  const Graph g = build_model(c.model, c.shape);
  const Block& lin = g.blocks[1];
  const Op& conv = only_op(g, lin, OpKind::causal_conv1d);
  CHECK(g.tensor(conv.outputs.at(0)).shape == std::vector<int64_t>{2, 128, 56});
  std::vector<const Op*> norms;
  for (int i : lin.forward_ops)
    if (g.ops[static_cast<size_t>(i)].kind == OpKind::l2norm)
      norms.push_back(&g.ops[static_cast<size_t>(i)]);
  REQUIRE(norms.size() == 2);
  CHECK(norms[0]->attrs.slice_offset == 0);  // q, scaled by 1/sqrt(dk)
  CHECK(norms[0]->attrs.scale == Approx(1.0 / std::sqrt(8.0)));
  CHECK(norms[1]->attrs.slice_offset == 16);  // k after q's 2 x 8
  CHECK(norms[1]->attrs.scale == 1.0f);
  const Op& rule = only_op(g, lin, OpKind::gated_delta_rule);
  CHECK(rule.attrs.heads == 4);
  CHECK(rule.attrs.kv_heads == 2);
  CHECK(rule.attrs.slice_offset == 32);  // v after q and k
  CHECK(rule.attrs.chunk_len == 0);
  CHECK(rule.inputs.at(slot::gated_delta_rule::v) == conv.outputs.at(0));
  const Op& gnorm = only_op(g, lin, OpKind::gated_rmsnorm);
  CHECK(!gnorm.attrs.norm_offset);
  CHECK(gnorm.attrs.eps == c.model.norm_eps);
  const Block& full = g.blocks[4];
  const Op& gate = only_op(g, full, OpKind::sigmoid_gate);
  CHECK(gate.attrs.slice_offset == 16);  // each head's gate after its 16 query floats
  CHECK(g.tensor(gate.inputs.at(slot::sigmoid_gate::gate)).shape ==
        std::vector<int64_t>{2, 128, 64});
  for (int i : full.forward_ops) {
    const Op& op = g.ops[static_cast<size_t>(i)];
    if (op.kind == OpKind::rope) CHECK(op.attrs.rotary_dims == 4);
    if (op.kind == OpKind::rmsnorm) CHECK(op.attrs.norm_offset);
  }
}

TEST_CASE("qwen35 graph: a chunk length gives the block its chunk-start states") {
  for (int chunk : {64, 128, 192}) {
    INFO("chunk " << chunk);
    const testing::Qwen35Case c = testing::tiny_qwen35(chunk);
    const Graph g = build_model(c.model, c.shape);
    const Block& lin = g.blocks[1];
    const Op& rule = only_op(g, lin, OpKind::gated_delta_rule);
    const int len = std::min(chunk, 128);
    // The forward ops' workspace: the chunkwise forward's scratch for one chunk, a workspace of
    // the block (graph/delta_rule_workspace.h).
    const Tensor& rws = g.tensor(rule.outputs.at(slot::gated_delta_rule::workspace));
    CHECK(rws.role == Role::workspace);
    CHECK(rws.block == 1);
    CHECK(uint64_t(rws.elements()) * 4 ==
          delta_rule_forward_workspace_bytes({2, 4, 8, 6, uint64_t(len)}));
    if (chunk >= 128) {
      CHECK(kinds_in(g, lin).count(OpKind::gated_delta_state) == 0);
      CHECK(rule.attrs.chunk_len == 0);
      continue;
    }
    const Op& state = only_op(g, lin, OpKind::gated_delta_state);
    const int64_t chunks = (128 + chunk - 1) / chunk;
    const Tensor& s = g.tensor(state.outputs.at(slot::gated_delta_state::states));
    CHECK(s.shape == std::vector<int64_t>{chunks - 1, 2, 4, 8, 6});
    CHECK(s.role == Role::activation);
    CHECK(s.block == 1);
    const Tensor& sws = g.tensor(state.outputs.at(slot::gated_delta_state::workspace));
    CHECK(sws.role == Role::workspace);
    CHECK(uint64_t(sws.elements()) * 4 == delta_rule_forward_workspace_bytes({2, 4, 8, 6, 64}));
    CHECK(rule.attrs.chunk_len == chunk);
    CHECK(rule.inputs.at(slot::gated_delta_rule::states) == s.id);
  }
}

// The chunkwise kernels' blocks sit at multiples of 64 tokens: a chunk length must be one.
TEST_CASE("qwen35 graph: a chunk length not a multiple of 64 is refused") {
  for (int chunk : {1, 8, 16, 100}) {
    INFO("chunk " << chunk);
    const testing::Qwen35Case c = testing::tiny_qwen35(chunk);
    CHECK_THROWS_WITH(build_model(c.model, c.shape),
                      Catch::Contains("delta chunk must be a multiple of 64 tokens"));
  }
}

TEST_CASE("qwen35 graph: packed rows give the conv and the recurrence the positions") {
  const testing::Qwen35Case c = testing::tiny_qwen35(64, true);
  const Graph g = build_model(c.model, c.shape);
  for (const Op& op : g.ops) {
    INFO(op_kind_name(op.kind));
    if (takes_positions(op.kind)) {
      CHECK(op.attrs.packed);
      CHECK(op.inputs.back() == g.positions);
    }
    CHECK(check_operand_arity(op.kind, op.attrs, op.inputs.size(), op.outputs.size()).empty());
  }
}

TEST_CASE("qwen35 graph: LoRA adapts the projections of both layer kinds by default") {
  const testing::Qwen35Case c = testing::tiny_qwen35();
  LoraSpec lora;
  lora.rank = 2;
  const Graph g = build_training_model(c.model, c.shape, lora);
  std::set<std::string> adapted;
  for (const LoraAdapter& a : g.adapters) adapted.insert(g.tensor(a.base).name);
  CHECK(adapted.count("model.layers.0.linear_attn.in_proj_qkv.weight"));
  CHECK(adapted.count("model.layers.0.linear_attn.in_proj_z.weight"));
  CHECK(adapted.count("model.layers.0.linear_attn.out_proj.weight"));
  CHECK(!adapted.count("model.layers.0.linear_attn.in_proj_a.weight"));
  CHECK(adapted.count("model.layers.3.self_attn.q_proj.weight"));
  CHECK(adapted.count("model.layers.3.mlp.down_proj.weight"));
  // Everything of the base is frozen: no gradient reaches A_log, the conv or the norms.
  for (const Op& op : g.ops) {
    if (op.kind == OpKind::gdn_gates_backward || op.kind == OpKind::causal_conv1d_backward ||
        op.kind == OpKind::gated_rmsnorm_backward)
      CHECK(op.attrs.frozen);
  }
}

TEST_CASE("qwen35 graph: generated configs build, differentiate and fit their schemas") {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    const testing::Qwen35Case c = testing::random_qwen35(seed);
    INFO("seed " << seed << " layers " << c.model.layers << " T " << c.shape.seq << " chunk "
                 << c.shape.delta_chunk);
    const Graph g = build_training_model(c.model, c.shape);
    CHECK(graph_parameters(g) == c.model.parameter_count());
    REQUIRE(g.parameter_grads.size() == g.parameters.size());
    for (const Op& op : g.ops)
      CHECK(check_operand_arity(op.kind, op.attrs, op.inputs.size(), op.outputs.size()).empty());
  }
}

}  // namespace remat

namespace remat {

// The chunk length changes the states a layer keeps, not the gradients' arithmetic: every
// chunking has the same backward ops, in the same order, with the same accumulate flags.
TEST_CASE("qwen35 graph: every chunk length has the same backward, write for write") {
  const auto backward = [](int chunk) {
    const testing::Qwen35Case c = testing::tiny_qwen35(chunk, true);
    const Graph g = build_training_model(c.model, c.shape);
    std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
    for (const Block& b : g.blocks)
      for (int i : b.backward_ops) {
        const Op& op = g.ops[static_cast<size_t>(i)];
        out.emplace_back(std::string(op_kind_name(op.kind)), op.attrs.accumulate);
      }
    return out;
  };
  const auto whole = backward(0);
  CHECK(whole.size() > 50);
  for (int chunk : {64, 128}) {
    INFO("chunk " << chunk);
    CHECK(backward(chunk) == whole);
  }
}

}  // namespace remat

#include "graph/op_schema.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include "graph/model_builder.h"
#include "tests/graph/random_qwen35.h"

namespace remat {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_CASE("op schema: every op kind has exactly one schema") {
  std::set<OpKind> seen;
  for (const OpSchema& s : kOpSchemas) {
    INFO(op_kind_name(s.kind));
    CHECK(seen.insert(s.kind).second);
    OpKind parsed{};
    CHECK(parse_op_kind(op_kind_name(s.kind), &parsed));
    CHECK(!s.outputs.empty());
  }
  CHECK(seen.size() == 43);
  CHECK(slot::matmul::bias == 2);
  CHECK(slot::adamw::grad_norm == 4);
  CHECK(slot::adamw::v_out == 2);
}

TEST_CASE(
    "op schema: every op of GPT, Llama and Qwen3.5 training graphs has its schema's operands") {
  TrainShape shape;
  shape.dropout = 0.1f;  // include the dropout ops
  const Graph gpt = build_training_model(ModelConfig::preset("tiny"), shape);
  ModelConfig llama = ModelConfig::preset("llama-tiny");
  llama.qkv_bias = true;
  const Graph lm = build_training_model(llama, TrainShape{});
  // Residuals forward their gradient (no backward op) except LoRA's scaled merges (alpha 2R).
  LoraSpec lora;
  lora.rank = 4;
  const Graph adapted = build_training_model(ModelConfig::preset("tiny"), TrainShape{}, lora);
  // Qwen3.5 with packed rows and a chunked recurrence: every op kind of its layers.
  const testing::Qwen35Case q = testing::tiny_qwen35(64, true);
  const Graph qwen = build_training_model(q.model, q.shape);
  std::set<OpKind> kinds;
  for (const Graph* g : {&gpt, &lm, &adapted, &qwen})
    for (const Op& op : g->ops) {
      INFO(op_kind_name(op.kind));
      CHECK(check_operand_arity(op.kind, op.attrs, op.inputs.size(), op.outputs.size()).empty());
      kinds.insert(op.kind);
    }
  CHECK(kinds.size() == 41);  // every kind but cross_entropy(_backward) appears in one of them
}

TEST_CASE("op schema: arity errors and operand names are checked") {
  OpAttrs bias;
  bias.has_bias = true;
  CHECK(check_operand_arity(OpKind::matmul, {}, 2, 1).empty());
  CHECK(check_operand_arity(OpKind::matmul, bias, 3, 1).empty());
  OpAttrs fused = bias;  // a fused residual: one more input, last
  fused.adds_residual = true;
  CHECK(check_operand_arity(OpKind::matmul, fused, 4, 1).empty());
  CHECK(check_operand_arity(OpKind::matmul, fused, 3, 1) ==
        "matmul takes 4 inputs (x, weight, bias?, residual?; has_bias; adds_residual), has 3");
  CHECK(check_operand_arity(OpKind::matmul, {}, 3, 1) ==
        "matmul takes 2 inputs (x, weight, bias?, residual?), has 3");
  CHECK(check_operand_arity(OpKind::matmul_backward, bias, 3, 2) ==
        "matmul_backward takes 3 outputs (dx, dweight?, dbias?; has_bias), has 2");
  // A frozen weight: dx only, and x is not read.
  OpAttrs frozen = bias;
  frozen.frozen = true;
  CHECK(check_operand_arity(OpKind::matmul_backward, frozen, 2, 1).empty());
  CHECK(check_operand_arity(OpKind::matmul_backward, frozen, 3, 1) ==
        "matmul_backward takes 2 inputs (dy, weight, x?; has_bias; frozen), has 3");
  CHECK(check_operand_arity(OpKind::layernorm_backward, frozen, 5, 1).empty());
  CHECK_FALSE(check_operand_arity(OpKind::layernorm_backward, frozen, 5, 3).empty());
  CHECK(check_operand_arity(OpKind::grad_norm, {}, 7, 1).empty());
  CHECK(check_operand_arity(OpKind::grad_norm, {}, 7, 2) ==
        "grad_norm takes 1 outputs (norm), has 2");

  CHECK(named_operands(OpKind::matmul, false, {{"weight", 5}, {"x", 4}}) ==
        std::vector<TensorId>{4, 5});
  CHECK(named_operands(OpKind::matmul, false, {{"bias", 6}, {"weight", 5}, {"x", 4}}) ==
        std::vector<TensorId>{4, 5, 6});
  CHECK_THROWS_WITH(named_operands(OpKind::matmul, false, {{"w", 5}, {"x", 4}}),
                    "matmul input 'w' is unknown");
  CHECK_THROWS_WITH(named_operands(OpKind::matmul, false, {{"x", 4}}),
                    "matmul input 'weight' is missing");
  CHECK_THROWS_WITH(named_operands(OpKind::gelu, true, {{"y", 1}, {"y", 2}}),
                    "gelu output 'y' given twice");
}

TEST_CASE("op schema: the delta rule's states and positions are each optional") {
  OpAttrs chunked;
  chunked.chunk_len = 64;
  OpAttrs packed;
  packed.packed = true;
  OpAttrs both = chunked;
  both.packed = true;
  CHECK(check_operand_arity(OpKind::gated_delta_rule, {}, 5, 2).empty());
  CHECK(check_operand_arity(OpKind::gated_delta_rule, chunked, 6, 2).empty());
  CHECK(check_operand_arity(OpKind::gated_delta_rule, packed, 6, 2).empty());
  CHECK(check_operand_arity(OpKind::gated_delta_rule, both, 7, 2).empty());
  CHECK(check_operand_arity(OpKind::gated_delta_rule, chunked, 5, 2) ==
        "gated_delta_rule takes 6 inputs (q, k, v, g, beta, states?, positions?), has 5");
  CHECK(check_operand_arity(OpKind::gated_delta_rule_backward, both, 8, 6).empty());
  CHECK(check_operand_arity(OpKind::gated_delta_state, packed, 5, 2).empty());
  // The forward ops' chunkwise scratch is an output of each (graph/delta_rule_workspace.h).
  CHECK(slot::gated_delta_rule::workspace == 1);
  CHECK(slot::gated_delta_state::workspace == 1);
  // Left out, an optional operand in the middle moves the ones after it up: positions stay last.
  const std::vector<std::pair<std::string_view, TensorId>> unchunked = {
      {"q", 1}, {"k", 2}, {"v", 3}, {"g", 4}, {"beta", 5}, {"states", kNoTensor}, {"positions", 9}};
  CHECK(named_operands(OpKind::gated_delta_rule, false, unchunked) ==
        std::vector<TensorId>{1, 2, 3, 4, 5, 9});
  CHECK(slot::gated_delta_rule::states == 5);
  CHECK(slot::gated_delta_rule_backward::workspace == 5);
  CHECK(slot::gated_rmsnorm_backward::d_o == 0);
  CHECK(slot::gdn_gates_backward::ddt_bias == 3);
  OpAttrs frozen;
  frozen.frozen = true;
  CHECK(check_operand_arity(OpKind::gdn_gates_backward, frozen, 6, 2).empty());
  CHECK(check_operand_arity(OpKind::causal_conv1d_backward, frozen, 3, 1).empty());
}

// docs/ops.md carries the table between two markers; regenerate it with `remat ops --markdown`.
TEST_CASE("op schema: docs/ops.md's operand table is the generated one") {
  const std::string doc = read_text(std::string(REMAT_SOURCE_DIR) + "/docs/ops.md");
  const std::string begin = "<!-- operand table: generated by `remat ops --markdown` -->\n";
  const std::string end = "<!-- end of generated table -->";
  const auto a = doc.find(begin);
  const auto b = doc.find(end);
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  CHECK(doc.substr(a + begin.size(), b - a - begin.size()) == op_schema_markdown());
}

}  // namespace
}  // namespace remat

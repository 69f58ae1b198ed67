// Cost model: FLOP counts for the big ops, the JSON cost table and its errors.
#include <catch2/catch.hpp>

#include "base/json.h"
#include "graph/autodiff.h"
#include "graph/cost_model.h"
#include "graph/model_builder.h"
#include "tests/graph/partial_rope_llama.h"
#include "tests/graph/random_qwen35.h"
#include "tests/graph/windowed_llama.h"

namespace remat {

TEST_CASE("cost: matmul FLOPs are 2MKN (+MN bias, +MN residual) forward and twice that backward") {
  const Graph g = build_training_gpt(ModelConfig::preset("tiny"), TrainShape{});
  for (const Op& op : g.ops) {
    if (op.kind != OpKind::matmul || !op.attrs.has_bias) continue;
    const auto& x = g.tensor(op.inputs[0]).shape;
    const auto& y = g.tensor(op.outputs[0]).shape;
    // + MN more where a residual is fused in (graph/residual_fusion.h).
    const double adds = op.attrs.adds_residual ? 1.0 * y[0] * y[1] : 0.0;
    CHECK(op.flops == 2.0 * x[0] * x[1] * y[1] + 1.0 * y[0] * y[1] + adds);
  }
  const Op& head = g.ops[static_cast<size_t>(g.blocks.back().forward_ops[1])];
  CHECK(head.flops == 2.0 * 256 * 128 * 256);
}

TEST_CASE("cost: a measured table replaces rates per kernel") {
  const CostModel m = CostModel::from_json(
      R"({"default": {"flops_per_s": 1e12, "bytes_per_s": 1e11, "launch_s": 0},
          "kernels": {"gelu": {"bytes_per_s": 1e9, "launch_s": 1e-6}}})");
  Op op;
  op.kind = OpKind::gelu;
  op.flops = 1e9;
  op.bytes = 1e6;
  CHECK(m.seconds(op) == Approx(std::max(1e9 / 1e12, 1e6 / 1e9) + 1e-6));
  op.kind = OpKind::matmul;
  CHECK(m.seconds(op) == Approx(1e-3));
  REQUIRE_THROWS_WITH(CostModel::from_json(R"({"kernels": {"conv": {}}})"),
                      Catch::Contains("unknown kernel 'conv'"));
  REQUIRE_THROWS_WITH(CostModel::from_json(R"({"default": {"flops_per_s": 0}})"),
                      Catch::Contains("positive"));
  REQUIRE_THROWS_AS(CostModel::from_json("{"), std::invalid_argument);
  REQUIRE_THROWS_AS(CostModel::load("/nonexistent/costs.json"), std::invalid_argument);
}

TEST_CASE("json: values, nesting, escapes and errors") {
  const JsonValue v =
      parse_json(R"( {"a": [1, -2.5e3, true, false, null], "b": {"c": "x\"y\n"}} )");
  REQUIRE(v.type == JsonValue::Type::object);
  const JsonValue& a = *v.find("a");
  REQUIRE(a.array.size() == 5);
  CHECK(a.array[1].number == -2500);
  CHECK(a.array[2].boolean);
  CHECK(!a.array[3].boolean);
  CHECK(a.array[3].type == JsonValue::Type::boolean);
  CHECK(a.array[4].type == JsonValue::Type::null);
  CHECK(v.find("b")->find("c")->string == "x\"y\n");
  CHECK(v.find("zz") == nullptr);
  REQUIRE_THROWS_WITH(parse_json("[1, 2"), Catch::Contains("byte"));
  REQUIRE_THROWS_AS(parse_json("{} x"), std::invalid_argument);
  REQUIRE_THROWS_AS(parse_json("{\"a\" 1}"), std::invalid_argument);
  REQUIRE_THROWS_AS(parse_json("\"open"), std::invalid_argument);
}

}  // namespace remat

namespace remat {

TEST_CASE("cost: every Llama op has work, grouped-query attention costs its query width") {
  const ModelConfig m = ModelConfig::preset("llama-tiny");  // 4 heads of 32, 2 KV heads
  const Graph g = build_training_model(m, TrainShape{2, 16, 0.0f, DType::f32});
  for (const Op& op : g.ops) {
    INFO(op_kind_name(op.kind));
    CHECK(op.bytes > 0);
    if (op.kind != OpKind::residual_backward) CHECK(op.flops > 0);
    if (op.kind == OpKind::gqa_attention) {
      const double b = 2, t = 16, c = 128, nh = 4;
      CHECK(op.flops == 2 * b * t * t * c + 5 * b * nh * t * t / 2);
    }
    if (op.kind == OpKind::gqa_attention_backward) {
      const Op& f = g.ops[static_cast<size_t>(op.forward_op)];
      CHECK(op.flops == 2.5 * f.flops);
    }
  }
}

TEST_CASE("cost: a sliding window prices attention by the keys it visits") {
  // llama-tiny at B 2, T 16: 4 heads of 32. Layer i's window is 4 + i; the first layers' windows
  // cut the triangle of T - w queries' keys that the kernels skip, a window of T or more none.
  const TrainShape shape{2, 16, 0.0f, DType::f32};
  const Graph plain = build_training_model(ModelConfig::preset("llama-tiny"), shape);
  const Graph windowed = testing::windowed_llama(shape, 4, 0.0f);
  const Graph wide = testing::windowed_llama(shape, 16, 0.0f);
  const double b = 2, t = 16, c = 128, nh = 4;
  int seen = 0;
  for (std::size_t i = 0; i < plain.ops.size(); ++i) {
    const Op &p = plain.ops[i], &w = windowed.ops[i];
    if (p.kind != OpKind::gqa_attention && p.kind != OpKind::gqa_attention_backward) continue;
    const int window = p.kind == OpKind::gqa_attention ? w.attrs.window : 0;
    if (window == 0) {
      CHECK(w.flops == 2.5 * windowed.ops[static_cast<size_t>(w.forward_op)].flops);
    } else {
      const double pairs = (t * t - (t - window) * (t - window)) / 2;
      CHECK(w.flops == 4 * b * pairs * c + 5 * b * nh * pairs);
    }
    CHECK(w.flops < p.flops);  // the planner sees that a window costs less
    CHECK(wide.ops[i].flops == p.flops);
    ++seen;
  }
  CHECK(seen == 2 * ModelConfig::preset("llama-tiny").layers);
}

TEST_CASE("cost: partial RoPE prices the rotated share of each head") {
  // llama-tiny: 4 query and 2 key/value heads of 32; rotary_dims 8 turns a quarter of each.
  const TrainShape shape{2, 16, 0.0f, DType::f32};
  const Graph plain = build_training_model(ModelConfig::preset("llama-tiny"), shape);
  const Graph partial = testing::partial_rope_llama(shape, 8);
  const Graph whole = testing::partial_rope_llama(shape, 32);
  int seen = 0;
  for (std::size_t i = 0; i < plain.ops.size(); ++i) {
    const Op &p = plain.ops[i], &r = partial.ops[i];
    if (p.kind != OpKind::rope && p.kind != OpKind::rope_backward) continue;
    INFO(op_kind_name(p.kind) << " op " << i);
    CHECK(r.attrs.rotary_dims == 8);
    CHECK(r.flops == p.flops / 4);
    CHECK(r.bytes == p.bytes);  // the pass-through elements are still read and written
    CHECK(whole.ops[i].flops == p.flops);
    ++seen;
  }
  CHECK(seen == 4 * ModelConfig::preset("llama-tiny").layers);  // q and k, forward and backward
}

}  // namespace remat

namespace remat {

TEST_CASE("cost: Qwen3.5's ops have work, and the recurrence costs its state passes") {
  // B 2, T 128, 2 key heads of 8, 4 value heads of 6, a 4-tap conv over 56 channels.
  const testing::Qwen35Case c = testing::tiny_qwen35(64);
  const Graph g = build_training_model(c.model, c.shape);
  const double state = 2.0 * 128 * 4 * 8 * 6;  // one dk x dv pass per value head and token
  int rules = 0;
  for (const Op& op : g.ops) {
    INFO(op_kind_name(op.kind));
    CHECK(op.bytes > 0);
    if (op.kind != OpKind::residual_backward) CHECK(op.flops > 0);
    if (op.kind == OpKind::gated_delta_state) CHECK(op.flops == 5 * state);
    if (op.kind == OpKind::gated_delta_rule) {
      CHECK(op.flops == 7 * state);
      ++rules;
    }
    if (op.kind == OpKind::gated_delta_rule_backward) CHECK(op.flops == 17 * state);
    if (op.kind == OpKind::causal_conv1d) CHECK(op.flops == (2 * 4 + 5) * 2.0 * 128 * 56);
  }
  CHECK(rules == 3);
}

}  // namespace remat

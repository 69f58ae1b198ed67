// End-to-end planner tests: every policy on GPT presets and on random heterogeneous chains must
// pass the symbolic-execution checker; backward order is policy-independent.
#include <catch2/catch.hpp>

#include <cstdio>

#include "graph/autodiff.h"
#include "planner/plan.h"
#include "planner/verify.h"
#include "tests/planner/random_chain.h"

namespace remat {
namespace {

std::vector<int> backward_sources(const Plan& p) {
  std::vector<int> out;
  for (const Step& s : p.steps)
    if (s.phase == Phase::backward) out.push_back(s.source_op);
  return out;
}

void require_sound(const Graph& g, const Plan& p) {
  const auto problems = verify_plan(g, p);
  for (const auto& line : problems) UNSCOPED_INFO(line);
  REQUIRE(problems.empty());
}

const char* kFixedPolicies[] = {"none",    "every:1", "every:2",  "every:3",
                                "every:8", "sqrt",    "selective"};

}  // namespace

TEST_CASE("planner: every fixed policy is sound on the tiny preset, with and without dropout") {
  for (float dropout : {0.0f, 0.1f}) {
    TrainShape shape;
    shape.dropout = dropout;
    const Graph g = build_training_gpt(ModelConfig::preset("tiny"), shape);
    std::vector<int> reference;
    for (const char* name : kFixedPolicies) {
      INFO(name << " dropout " << dropout);
      const Plan p = plan_graph(g, {Policy::parse(name), std::nullopt, 256, nullptr});
      require_sound(g, p);
      if (reference.empty()) reference = backward_sources(p);
      REQUIRE(backward_sources(p) == reference);
    }
  }
}

TEST_CASE("planner: the plan names its logits and checkpoints by tensor id") {
  const Graph g = build_training_gpt(ModelConfig::preset("tiny"), TrainShape{});
  const Plan p = plan_graph(g, {Policy::parse("every:2"), std::nullopt, 256, nullptr});
  REQUIRE(p.logits != kNoTensor);
  CHECK(p.tensors.at(static_cast<size_t>(p.logits)).tensor.name == "head.logits");
  const auto& r = p.report;
  REQUIRE(r.checkpoints.size() == 2);  // h.0 and h.2 of the four blocks
  REQUIRE(r.checkpoint_blocks.size() == r.checkpoints.size());
  REQUIRE(r.checkpoint_tensors.size() == r.checkpoints.size());
  for (size_t i = 0; i < r.checkpoints.size(); ++i) {
    const Block& b = g.blocks.at(static_cast<size_t>(r.checkpoint_blocks[i]));
    CHECK(b.name == r.checkpoints[i]);
    CHECK(r.checkpoint_tensors[i] == b.input);
  }
  CHECK(p.report.analytic.interval == 2);
}

TEST_CASE("planner: checkpointing trades arena for recompute on gpt2 blocks") {
  TrainShape shape;
  shape.batch = 1;
  shape.seq = 256;
  // A small vocabulary so the transformer blocks, not the logits, set the peak.
  ModelConfig cfg = ModelConfig::preset("gpt2");
  cfg.vocab = 256;
  const Graph g = build_training_gpt(cfg, shape);
  const Plan none = plan_graph(g, {Policy::parse("none"), std::nullopt, 256, nullptr});
  const Plan every4 = plan_graph(g, {Policy::parse("every:4"), std::nullopt, 256, nullptr});
  const Plan every1 = plan_graph(g, {Policy::parse("every:1"), std::nullopt, 256, nullptr});
  const Plan sel = plan_graph(g, {Policy::parse("selective"), std::nullopt, 256, nullptr});
  require_sound(g, every4);
  CHECK(none.report.recompute_flops == 0);
  CHECK(none.report.predicted_step_ratio == Approx(1.0));
  CHECK(every4.arena_bytes < none.arena_bytes);
  CHECK(every1.arena_bytes < every4.arena_bytes);
  CHECK(sel.arena_bytes < none.arena_bytes);
  CHECK(every4.report.recompute_flops > 0);
  CHECK(every4.report.predicted_step_ratio > 1.0);
  CHECK(sel.report.recompute_flops < every1.report.recompute_flops);
  // every:4 on 12 layers checkpoints the inputs of h.0, h.4, h.8.
  CHECK(every4.report.checkpoints == std::vector<std::string>{"h.0", "h.4", "h.8"});
  CHECK(every4.report.forward_flops == none.report.forward_flops);
  CHECK(every4.report.backward_flops == none.report.backward_flops);
}

TEST_CASE("planner: fixed policies are sound on random heterogeneous chains") {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    const Graph g = testing::random_training_chain(seed, 1, 9);
    for (const char* name : kFixedPolicies) {
      INFO("seed " << seed << " policy " << name);
      const uint64_t alignment = seed % 3 == 0 ? 64 : 256;
      require_sound(g, plan_graph(g, {Policy::parse(name), std::nullopt, alignment, nullptr}));
    }
  }
}

TEST_CASE("planner: a fixed policy over its budget is a user error naming the need") {
  const Graph g = build_training_gpt(ModelConfig::preset("tiny"), TrainShape{});
  const Plan p = plan_graph(g, {Policy::parse("none"), std::nullopt, 256, nullptr});
  REQUIRE_NOTHROW(plan_graph(g, {Policy::parse("none"), p.arena_bytes, 256, nullptr}));
  REQUIRE_THROWS_WITH(plan_graph(g, {Policy::parse("none"), p.arena_bytes - 1, 256, nullptr}),
                      Catch::Contains(std::to_string(p.arena_bytes)));
}

TEST_CASE("planner: auto without a budget and bad shapes are invalid_argument") {
  REQUIRE_THROWS_AS(plan(ModelConfig::preset("tiny"), TrainShape{}, Policy::parse("auto")),
                    std::invalid_argument);
  TrainShape too_long;
  too_long.seq = 65;
  REQUIRE_THROWS_WITH(plan(ModelConfig::preset("tiny"), too_long, Policy{}),
                      Catch::Contains("ctx"));
}

TEST_CASE("planner: persistent buffer holds params, grads, moments and io, exactly and aligned") {
  const ModelConfig cfg = ModelConfig::preset("tiny");
  const Plan p = plan(cfg, TrainShape{}, Policy{});
  uint64_t params = 0;
  for (TensorId t : p.parameters) params += p.tensors[static_cast<size_t>(t)].bytes;
  CHECK(params == cfg.parameter_count() * 4);
  CHECK(p.report.parameter_bytes == params);
  CHECK(p.report.grad_bytes == params);
  CHECK(p.report.adam_bytes == 2 * params);
  CHECK(p.report.io_bytes == 4 * 64 * 4 * 3);
  CHECK(p.persistent_bytes >= 4 * params + p.report.io_bytes);
  CHECK(p.persistent_bytes % 256 == 0);
  for (const auto& t : p.tensors)
    if (t.placement == Placement::persistent) CHECK(t.offset % 256 == 0);
}

}  // namespace remat

// The planner on Qwen3.5 graphs: every policy is sound on generated configs (chunked or not,
// packed or not), auto is sound across budgets, the plan reports the delta rule's chunk states,
// and the chunk length trades kept states against the backward's workspace exactly.
#include <catch2/catch.hpp>

#include "graph/delta_rule_workspace.h"
#include "graph/model_builder.h"
#include "planner/auto_search.h"
#include "planner/plan.h"
#include "planner/verify.h"
#include "tests/graph/random_qwen35.h"

namespace remat {
namespace {

void require_sound(const Graph& g, const Plan& p) {
  const auto problems = verify_plan(g, p);
  for (const auto& line : problems) UNSCOPED_INFO(line);
  REQUIRE(problems.empty());
}

std::vector<int> backward_sources(const Plan& p) {
  std::vector<int> out;
  for (const Step& s : p.steps)
    if (s.phase == Phase::backward) out.push_back(s.source_op);
  return out;
}

}  // namespace

TEST_CASE("qwen35 planner: every fixed policy is sound on generated configs") {
  for (uint32_t seed = 1; seed <= 25; ++seed) {
    const auto c = testing::random_qwen35(seed);
    const Graph g = build_training_model(c.model, c.shape);
    std::vector<int> reference;
    for (const char* name : {"none", "every:1", "every:2", "sqrt", "selective"}) {
      INFO("seed " << seed << " policy " << name << " T " << c.shape.seq << " chunk "
                   << c.shape.delta_chunk << " packed " << c.shape.packed);
      const Plan p = plan_graph(g, {Policy::parse(name), std::nullopt, 256, nullptr});
      require_sound(g, p);
      if (reference.empty()) reference = backward_sources(p);
      REQUIRE(backward_sources(p) == reference);
    }
  }
}

TEST_CASE("qwen35 planner: auto is sound from its minimum budget to storing everything") {
  for (uint32_t seed = 200; seed < 206; ++seed) {
    const auto c = testing::random_qwen35(seed);
    const Graph g = build_training_model(c.model, c.shape);
    const PlanRequest req{Policy{Policy::Kind::automatic, 0}, std::nullopt, 256, nullptr};
    const AutoPlanner planner(g, req);
    const uint64_t lo = planner.minimum_arena();
    const uint64_t hi = plan_graph(g, {Policy{}, std::nullopt, 256, nullptr}).arena_bytes;
    for (int i = 0; i <= 4; ++i) {
      const uint64_t budget = lo + (hi - lo) * static_cast<uint64_t>(i) / 4;
      INFO("seed " << seed << " budget " << budget);
      const Plan p = planner.plan(budget);
      REQUIRE(p.arena_bytes <= budget);
      require_sound(g, p);
    }
    REQUIRE_THROWS_AS(planner.plan(lo - 1), std::invalid_argument);
  }
}

TEST_CASE("qwen35 planner: the report gives the chunk states, kept or recomputed") {
  auto c = testing::tiny_qwen35(64);  // B 2, T 128: 1 chunk-start state per layer
  const Plan none = plan(c.model, c.shape, Policy::parse("none"));
  CHECK(none.report.delta_chunk == 64);
  CHECK(none.report.delta_state_layers == 3);
  CHECK(none.report.delta_state_bytes == 3u * (1 * 2 * 4 * 8 * 6) * 4);
  CHECK(none.report.delta_states_recomputed == 0);
  const Plan sel = plan(c.model, c.shape, Policy::parse("selective"));
  CHECK(sel.report.delta_states_recomputed == 0);  // kept as attention's outputs are
  const Plan every1 = plan(c.model, c.shape, Policy::parse("every:1"));
  CHECK(every1.report.delta_states_recomputed == 3);
  c.shape.delta_chunk = 0;
  const Plan whole = plan(c.model, c.shape, Policy::parse("none"));
  CHECK(whole.report.delta_chunk == 128);
  CHECK(whole.report.delta_state_bytes == 0);
  CHECK(whole.report.delta_state_layers == 0);
}

// The forward ops' chunkwise scratch is a workspace of its op alone: a recomputed block's is a
// version of its own, so neither lives from the forward until the recompute.
TEST_CASE("qwen35 planner: every workspace lives during its one step, recomputed or not") {
  const auto c = testing::tiny_qwen35(64);
  const Plan p = plan(c.model, c.shape, Policy::parse("every:1"));
  REQUIRE(p.report.delta_states_recomputed == 3);
  int recomputed = 0;
  for (const PlannedTensor& t : p.tensors) {
    // The optimizer's (block -1: the gradient norm) spans its steps.
    if (t.tensor.role != Role::workspace || t.placement != Placement::arena || t.tensor.block < 0)
      continue;
    INFO(t.tensor.name);
    CHECK(t.first_step == t.last_step);
    if (t.tensor.name.find("_ws@recompute") != std::string::npos) ++recomputed;
  }
  CHECK(recomputed == 3 * 2);  // each layer's state and rule ops
}

TEST_CASE("qwen35 planner: a chunk length trades kept states for the backward's workspace") {
  // Qwen3.5-0.8B's linear heads at B 1, T 256: a state is 16 x 128 x 128 floats (1 MiB).
  const ModelConfig m = ModelConfig::preset("qwen3.5-0.8b");
  TrainShape s{1, 256, 0.0f, DType::f32};
  s.loss_chunk = 256;
  const uint64_t state = 16ull * 128 * 128 * 4;
  for (int chunk : {64, 128, 0}) {
    INFO("chunk " << chunk);
    s.delta_chunk = chunk;
    const Plan p = plan(m, s, Policy::parse("none"));
    const int len = chunk == 0 ? 256 : chunk;
    CHECK(p.report.delta_state_bytes == 18u * (256 / len - 1) * state);
    // The largest workspace is one layer's backward over one chunk (graph/delta_rule_workspace.h).
    uint64_t ws = 0;
    for (const PlannedTensor& t : p.tensors)
      if (t.tensor.role == Role::workspace && t.tensor.name.ends_with(".states_ws"))
        ws = std::max(ws, t.bytes);
    CHECK(ws == delta_rule_workspace_layout({1, 16, 128, 128, uint64_t(len)}).bytes);
  }
}

}  // namespace remat

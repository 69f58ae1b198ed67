// Plans of Qwen3.5 LoRA graphs: every fixed policy is sound and runs one backward on generated
// configs with every projection adapted, auto is sound from its least arena to storing all, and
// on Qwen3.5-0.8B's shape the frozen base costs no gradient or moment bytes.
#include <catch2/catch.hpp>

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

LoraSpec every_projection(int rank) {
  LoraSpec l;
  l.rank = rank;
  l.targets = {"q_proj",    "k_proj",    "v_proj",   "o_proj",    "in_proj_qkv", "in_proj_z",
               "in_proj_a", "in_proj_b", "out_proj", "gate_proj", "up_proj",     "down_proj"};
  return l;
}

}  // namespace

TEST_CASE("qwen35 lora plans: every fixed policy is sound on generated configs") {
  for (uint32_t seed = 1; seed <= 15; ++seed) {
    const auto c = testing::random_qwen35(seed);
    const Graph g = build_training_model(c.model, c.shape, every_projection(2));
    REQUIRE_FALSE(g.adapters.empty());
    std::vector<int> reference;
    for (const char* name : {"none", "every:1", "every:2", "sqrt", "selective"}) {
      INFO("seed " << seed << " policy " << name << " chunk " << c.shape.delta_chunk);
      const Plan p = plan_graph(g, {Policy::parse(name), std::nullopt, 256, nullptr});
      require_sound(g, p);
      if (reference.empty()) reference = backward_sources(p);
      REQUIRE(backward_sources(p) == reference);
    }
  }
}

TEST_CASE("qwen35 lora plans: auto is sound from its least arena to storing everything") {
  for (uint32_t seed = 300; seed < 304; ++seed) {
    const auto c = testing::random_qwen35(seed);
    LoraSpec lora;
    lora.rank = 4;  // the defaults
    const Graph g = build_training_model(c.model, c.shape, lora);
    const AutoPlanner planner(g, {Policy{Policy::Kind::automatic, 0}, std::nullopt, 256, nullptr});
    const uint64_t lo = planner.minimum_arena();
    const uint64_t hi = plan_graph(g, {Policy{}, std::nullopt, 256, nullptr}).arena_bytes;
    for (int i = 0; i <= 3; ++i) {
      const uint64_t budget = lo + (hi - lo) * static_cast<uint64_t>(i) / 3;
      INFO("seed " << seed << " budget " << budget);
      const Plan p = planner.plan(budget);
      REQUIRE(p.arena_bytes <= budget);
      require_sound(g, p);
    }
    REQUIRE_THROWS_AS(planner.plan(lo - 1), std::invalid_argument);
  }
}

TEST_CASE("qwen35 lora plans: Qwen3.5-0.8B's base is frozen, adapters carry the optimizer") {
  const ModelConfig m = ModelConfig::preset("qwen3.5-0.8b");
  TrainShape s;
  s.batch = 1;
  s.seq = 64;
  s.loss_chunk = 64;
  LoraSpec lora;
  lora.rank = 8;
  const Graph g = build_training_model(m, s, lora);
  const Graph full = build_training_model(m, s);
  const PlanRequest req{Policy::parse("every:4"), std::nullopt, 256, nullptr};
  const Plan p = plan_graph(g, req);
  const Plan f = plan_graph(full, req);
  require_sound(g, p);
  // Full fine-tuning keeps weights, gradients and two moments in f32: four copies; LoRA one
  // copy of the base and the adapters' four.
  uint64_t adapters = 0;
  for (TensorId t : g.parameters) adapters += uint64_t(g.tensor(t).elements());
  const uint64_t base = 4 * m.parameter_count();
  CHECK(p.persistent_bytes >= base + 4 * 4 * adapters);
  CHECK(p.persistent_bytes < base + 4 * 4 * adapters + (uint64_t(8) << 20));
  CHECK(f.persistent_bytes >= 4 * base);
}

}  // namespace remat

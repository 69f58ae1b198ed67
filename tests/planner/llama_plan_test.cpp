// The planner on Llama-family graphs: every policy, on many random small configs (tied or untied
// head, q/k/v biases, one key/value head, fewer or as many as the query heads), passes the
// symbolic-execution checker with the same backward order; auto is sound across budgets; and
// selective keeps the matmul and attention outputs while recomputing RMSNorm, RoPE and SwiGLU.
#include <catch2/catch.hpp>

#include <set>

#include "graph/model_builder.h"
#include "planner/auto_search.h"
#include "planner/plan.h"
#include "planner/verify.h"
#include "tests/graph/random_llama.h"

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

std::set<OpKind> recomputed_kinds(const Plan& p) {
  std::set<OpKind> out;
  for (const Step& s : p.steps)
    if (s.phase == Phase::recompute) out.insert(s.kind);
  return out;
}

}  // namespace

TEST_CASE("llama planner: every fixed policy is sound on random configs") {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const auto c = testing::random_llama(seed);
    const Graph g = build_training_model(c.model, c.shape);
    std::vector<int> reference;
    for (const char* name :
         {"none", "every:1", "every:2", "every:3", "every:8", "sqrt", "selective"}) {
      INFO("seed " << seed << " policy " << name << " kv " << c.model.kv_head_count() << "/"
                   << c.model.heads << " tied " << c.model.tied_head);
      const Plan p =
          plan_graph(g, {Policy::parse(name), std::nullopt, seed % 3 ? 256u : 64u, nullptr});
      require_sound(g, p);
      if (reference.empty()) reference = backward_sources(p);
      REQUIRE(backward_sources(p) == reference);
    }
  }
}

TEST_CASE("llama planner: auto is sound from its minimum budget to storing everything") {
  for (uint32_t seed = 100; seed < 110; ++seed) {
    const auto c = testing::random_llama(seed);
    const Graph g = build_training_model(c.model, c.shape);
    const PlanRequest req{Policy{Policy::Kind::automatic, 0}, std::nullopt, 256, nullptr};
    const AutoPlanner planner(g, req);
    const uint64_t lo = planner.minimum_arena();
    const uint64_t hi = plan_graph(g, {Policy{}, std::nullopt, 256, nullptr}).arena_bytes;
    for (int i = 0; i <= 8; ++i) {
      const uint64_t budget = lo + (hi - lo) * static_cast<uint64_t>(i) / 8;
      INFO("seed " << seed << " budget " << budget);
      const Plan p = planner.plan(budget);
      REQUIRE(p.arena_bytes <= budget);
      require_sound(g, p);
    }
    REQUIRE_THROWS_AS(planner.plan(lo - 1), std::invalid_argument);
  }
}

TEST_CASE("llama planner: selective keeps matmul and attention outputs, recomputes the rest") {
  const ModelConfig m = ModelConfig::preset("llama-tiny");
  const TrainShape s{4, 64, 0.0f, DType::f32};
  const Plan none = plan(m, s, Policy::parse("none"));
  const Plan sel = plan(m, s, Policy::parse("selective"));
  const Plan every1 = plan(m, s, Policy::parse("every:1"));
  CHECK(sel.arena_bytes < none.arena_bytes);
  CHECK(every1.arena_bytes < sel.arena_bytes);
  CHECK(recomputed_kinds(none).empty());
  // (No residual ops: both of a layer's are fused into o_proj and down_proj.)
  CHECK(recomputed_kinds(sel) == std::set<OpKind>{OpKind::rmsnorm, OpKind::rope, OpKind::swiglu});
  CHECK(recomputed_kinds(every1).count(OpKind::gqa_attention) == 1);
  CHECK(recomputed_kinds(every1).count(OpKind::matmul) == 1);
  CHECK(sel.report.recompute_flops < every1.report.recompute_flops);
  CHECK(sel.report.forward_flops == none.report.forward_flops);
  CHECK(plan(m, s, Policy::parse("auto"), sel.arena_bytes).arena_bytes <= sel.arena_bytes);
}

TEST_CASE("llama planner: SmolLM2-135M plans at its real size") {
  const Plan p = plan(ModelConfig::preset("smollm2-135m"), TrainShape{4, 256, 0.0f, DType::f32},
                      Policy::parse("sqrt"));
  CHECK(p.report.checkpoints.size() >= 5);
  CHECK(p.persistent_bytes > 4 * 134515008ull * 4);  // parameters, gradients, two moments
  CHECK(p.arena_bytes > 0);
}

}  // namespace remat

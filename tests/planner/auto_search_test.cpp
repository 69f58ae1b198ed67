// `auto`: the DP equals a brute force over the same strategy space under the same model, is
// never worse than single-level plans that fit, is monotone in the budget, and its minimum
// budget is exact.
#include <catch2/catch.hpp>

#include <cstdio>
#include <functional>

#include "graph/autodiff.h"
#include "planner/auto_search.h"
#include "planner/verify.h"
#include "tests/planner/random_chain.h"

namespace remat {
namespace {

using Seq = std::vector<Action>;

// Visits every action sequence the recursion C(s,t) can produce (leaf / keep all / keep
// selective / split k), written independently of the DP, in continuation-passing style so that
// a million sequences need no storage.
void each_sequence(int s, int t, int n, Seq& cur, const std::function<void()>& done) {
  if (s == t) return done();
  if (t == s + 1 && s != n - 1) {
    cur.push_back({false, s, KeepLevel::none, false});
    done();
    cur.pop_back();
  }
  for (KeepLevel l : {KeepLevel::all, KeepLevel::selective}) {
    cur.push_back({true, s, l, true});
    each_sequence(s + 1, t, n, cur, [&] {
      cur.push_back({false, s, KeepLevel::none, false});
      done();
      cur.pop_back();
    });
    cur.pop_back();
  }
  for (int k = s + 1; k < t; ++k) {
    for (int j = s; j < k; ++j) cur.push_back({true, j, KeepLevel::none, j == s});
    each_sequence(k, t, n, cur, [&] { each_sequence(s, k, n, cur, done); });
    cur.resize(cur.size() - static_cast<size_t>(k - s));
  }
}

ChainModel coarse_model(const Graph& g, uint64_t units) {
  const BlockCosts bytes = block_costs(g, 256, CostModel{});
  const int n = static_cast<int>(g.blocks.size());
  const auto all = static_cast<uint64_t>(
      simulate(quantize(bytes, 1), store_all_strategy(n, KeepLevel::all)).peak);
  return quantize(bytes, (all + units - 1) / units);
}

}  // namespace

TEST_CASE("auto: the DP equals brute force over the same space on 6-7 block chains") {
  for (uint32_t seed = 100; seed < 105; ++seed) {
    const Graph g = testing::random_training_chain(seed, 4, seed < 102 ? 5 : 4);
    const int n = static_cast<int>(g.blocks.size());
    const ChainModel model = coarse_model(g, 96);
    const int64_t top = simulate(model, store_all_strategy(n, KeepLevel::all)).peak;
    const CheckpointDp dp(model, top);
    // Brute force: the fastest sequence at each peak, then a running minimum over the budget.
    std::vector<double> fastest_at_peak(static_cast<size_t>(top + 1), CheckpointDp::kInfeasible);
    size_t count = 0;
    Seq cur;
    each_sequence(0, n, n, cur, [&] {
      ++count;
      const ModelRun r = simulate(model, cur);
      if (r.peak <= top) {
        double& slot = fastest_at_peak[static_cast<size_t>(r.peak)];
        slot = std::min(slot, r.seconds);
      }
    });
    INFO("seed " << seed << ", " << n << " blocks, " << count << " strategies");
    double brute = CheckpointDp::kInfeasible;
    for (int64_t m = 0; m <= top; ++m) {
      brute = std::min(brute, fastest_at_peak[static_cast<size_t>(m)]);
      const double best = dp.best_seconds(m);
      INFO("m = " << m);
      if (brute == CheckpointDp::kInfeasible) {
        REQUIRE(best == CheckpointDp::kInfeasible);
        continue;
      }
      REQUIRE(best == Approx(brute).epsilon(1e-12));
      // The reconstructed strategy is in the space and achieves the value within the budget.
      const ModelRun chosen = simulate(model, dp.strategy(m));
      REQUIRE(chosen.peak <= m);
      REQUIRE(chosen.seconds == Approx(best).epsilon(1e-12));
    }
    REQUIRE(dp.min_feasible_units() >= 0);
  }
}

TEST_CASE("auto: never slower than any single-level plan within the same model budget") {
  for (uint32_t seed = 200; seed < 206; ++seed) {
    const Graph g = testing::random_training_chain(seed, 4, 6);
    const int n = static_cast<int>(g.blocks.size());
    const AutoPlanner planner(g, {Policy{Policy::Kind::automatic, 0}, std::nullopt, 256, nullptr});
    const ChainModel& model = planner.model();
    // Single-level: every subset of segment starts x uniform keep level x stored singles.
    std::vector<ModelRun> singles;
    for (uint32_t mask = 0; mask < (1u << (n - 1)); ++mask) {
      std::vector<int> starts = {0};
      for (int b = 1; b < n; ++b)
        if (mask & (1u << (b - 1))) starts.push_back(b);
      for (KeepLevel l : {KeepLevel::all, KeepLevel::selective})
        for (bool stored : {false, true})
          singles.push_back(simulate(
              model,
              single_level_strategy(n, starts, std::vector<bool>(static_cast<size_t>(n), stored),
                                    std::vector<KeepLevel>(static_cast<size_t>(n), l))));
    }
    int budgets = 0, fallbacks = 0;
    for (int64_t m = planner.dp().min_feasible_units(); m <= planner.dp().max_units(); m += 7) {
      INFO("seed " << seed << " units " << m);
      const double best = planner.dp().best_seconds(m);
      for (const ModelRun& r : singles)
        if (r.peak <= m) REQUIRE(best <= r.seconds * (1 + 1e-12));
      // The exact layout decides: count how often the DP's choice did not fit its own budget
      // and auto fell back to a tighter (slower) one. Reported, not asserted: the greedy layout
      // can exceed the liveness bound the model is calibrated against.
      const Plan exact = planner.plan(static_cast<uint64_t>(m) * model.quantum);
      ++budgets;
      if (simulate(model, exact.strategy).seconds > best * (1 + 1e-12)) ++fallbacks;
    }
    std::printf("auto on chain %u: exact layout forced a slower plan at %d of %d budgets\n", seed,
                fallbacks, budgets);
  }
}

TEST_CASE("auto: plans are sound and monotone in the budget on random chains") {
  for (uint32_t seed = 300; seed < 312; ++seed) {
    const Graph g = testing::random_training_chain(seed, 1, 10);
    const PlanRequest req{Policy{Policy::Kind::automatic, 0}, std::nullopt, seed % 2 ? 64u : 256u,
                          nullptr};
    const AutoPlanner planner(g, req);
    const uint64_t lo = planner.minimum_arena();
    const uint64_t hi = plan_graph(g, {Policy{}, std::nullopt, req.alignment, nullptr}).arena_bytes;
    double previous = CheckpointDp::kInfeasible;
    for (int i = 0; i <= 24; ++i) {
      const uint64_t budget = lo + (hi + hi / 10 - lo) * static_cast<uint64_t>(i) / 24;
      const Plan p = planner.plan(budget);
      INFO("seed " << seed << " budget " << budget);
      const auto problems = verify_plan(g, p);
      for (const auto& line : problems) UNSCOPED_INFO(line);
      REQUIRE(problems.empty());
      REQUIRE(p.report.predicted_seconds <= previous);
      previous = p.report.predicted_seconds;
    }
    // With room for everything, auto is as fast as storing everything.
    REQUIRE(previous == Approx(planner.plan(hi + hi / 10).report.baseline_seconds).epsilon(1e-12));
  }
}

TEST_CASE("auto: the minimum budget succeeds and one byte less names it") {
  for (const char* preset : {"tiny", "gpt2"}) {
    TrainShape shape;
    shape.batch = 2;
    shape.seq = std::string(preset) == "tiny" ? 64 : 128;
    const Graph g = build_training_gpt(ModelConfig::preset(preset), shape);
    const AutoPlanner planner(g, {Policy{Policy::Kind::automatic, 0}, std::nullopt, 256, nullptr});
    const uint64_t minimum = planner.minimum_arena();
    INFO(preset << " minimum " << minimum);
    const Plan p = planner.plan(minimum);
    REQUIRE(p.arena_bytes <= minimum);
    REQUIRE(verify_plan(g, p).empty());
    REQUIRE_THROWS_AS(planner.plan(minimum - 1), std::invalid_argument);
    REQUIRE_THROWS_WITH(planner.plan(minimum - 1),
                        Catch::Contains(std::to_string(minimum) + " bytes"));
    // The minimum plan is nested when single-level segments cannot reach it.
    const Plan every1 = plan_graph(g, {Policy::parse("every:1"), std::nullopt, 256, nullptr});
    REQUIRE(minimum <= every1.arena_bytes);
  }
}

TEST_CASE("auto: gpt2 at small budgets uses nested segments and stays sound") {
  TrainShape shape;
  shape.batch = 1;
  shape.seq = 256;
  ModelConfig cfg = ModelConfig::preset("gpt2-medium");
  cfg.vocab = 512;  // keep the blocks, not the logits, the limit
  const Graph g = build_training_gpt(cfg, shape);
  const AutoPlanner planner(g, {Policy{Policy::Kind::automatic, 0}, std::nullopt, 256, nullptr});
  const Plan p = planner.plan(planner.minimum_arena());
  REQUIRE(verify_plan(g, p).empty());
  const Plan sqrt_plan = plan_graph(g, {Policy::parse("sqrt"), std::nullopt, 256, nullptr});
  CHECK(p.arena_bytes < sqrt_plan.arena_bytes);
  CHECK(p.report.nesting_depth >= 2);
}

}  // namespace remat

TEST_CASE("auto with room for every activation stores everything") {
  using namespace remat;
  const ModelConfig m = ModelConfig::preset("tiny");
  TrainShape s;
  s.batch = 8;
  s.seq = 64;
  const Plan none = plan(m, s, Policy{});
  const Plan at = plan(m, s, Policy::parse("auto"), none.arena_bytes);
  CHECK(at.arena_bytes == none.arena_bytes);
  CHECK(at.report.recompute_flops == 0);
  CHECK(at.report.predicted_step_ratio == Approx(1.0));
  const Plan below = plan(m, s, Policy::parse("auto"), none.arena_bytes - 1);
  CHECK(below.report.recompute_flops > 0);
}

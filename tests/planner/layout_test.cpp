// Liveness, arena layout, schedule versions, policies and the textbook numbers.
#include <catch2/catch.hpp>

#include <cstdio>

#include "graph/autodiff.h"
#include "planner/analytic.h"
#include "planner/arena_layout.h"
#include "planner/plan.h"
#include "planner/policy.h"

namespace remat {

TEST_CASE("layout: best fit reuses a freed gap and respects alignment") {
  // a [0,1] 100B, b [0,3] 50B, c [2,3] 100B: c can reuse a's bytes.
  const std::vector<uint64_t> sizes = {100, 50, 100};
  const std::vector<Interval> iv = {{0, 1}, {0, 3}, {2, 3}};
  const ArenaLayout l = layout_arena(sizes, iv, 64);
  CHECK(l.offsets[0] == l.offsets[2]);
  CHECK(l.arena_bytes == 128 + 64);
  for (uint64_t o : l.offsets) CHECK(o % 64 == 0);
  // The smallest sufficient gap wins over a larger one.
  const std::vector<uint64_t> s2 = {256, 64, 256, 64};
  const std::vector<Interval> i2 = {{0, 5}, {0, 0}, {0, 5}, {2, 2}};
  const ArenaLayout l2 = layout_arena(s2, i2, 64);
  CHECK(l2.offsets[3] == l2.offsets[1]);
  CHECK(l2.arena_bytes == 576);
}

TEST_CASE("liveness: lower bound is the largest live set") {
  TrainShape s;
  const Graph g = build_training_gpt(ModelConfig::preset("tiny"), s);
  const Plan p = plan_graph(g, {Policy{}, std::nullopt, 1, nullptr});
  uint64_t best = 0;
  for (size_t step = 0; step < p.steps.size(); ++step) {
    uint64_t live = 0;
    for (const auto& t : p.tensors)
      if (t.placement == Placement::arena && t.first_step <= static_cast<int>(step) &&
          static_cast<int>(step) <= t.last_step)
        live += t.bytes;
    best = std::max(best, live);
  }
  CHECK(p.arena_lower_bound == best);
  CHECK(p.arena_bytes >= best);
}

TEST_CASE("schedule: recomputed values are distinct tensors with their own lifetime") {
  const Graph g = build_training_gpt(ModelConfig::preset("tiny"), TrainShape{});
  const Plan p = plan_graph(g, {Policy::parse("every:4"), std::nullopt, 256, nullptr});
  int versions = 0;
  for (const auto& t : p.tensors)
    if (t.tensor.id != t.original) {
      ++versions;
      CHECK(t.tensor.name.find("@recompute") != std::string::npos);
      const auto& orig = p.tensors[static_cast<size_t>(t.original)];
      CHECK(orig.last_step < t.first_step);  // the original died before its recompute was made
    }
  CHECK(versions > 0);
  for (const Step& s : p.steps)
    if (s.phase == Phase::recompute) CHECK(s.block >= 1);
}

TEST_CASE("policy: parse and print, bad policies say what is accepted") {
  CHECK(Policy::parse("every:4").interval == 4);
  CHECK(Policy::parse("every:4").to_string() == "every:4");
  CHECK(Policy::parse("auto").kind == Policy::Kind::automatic);
  CHECK(Policy::parse("sqrt").to_string() == "sqrt");
  REQUIRE_THROWS_WITH(Policy::parse("every:0"), Catch::Contains("positive interval"));
  REQUIRE_THROWS_WITH(Policy::parse("every:x"), Catch::Contains("every:4"));
  REQUIRE_THROWS_WITH(Policy::parse("revolve"),
                      Catch::Contains("none, every:K, sqrt, selective or auto"));
}

TEST_CASE("analytic: the textbook worked example") {
  // H=4096, L=32, S=1024, B=2, b=2 bytes, I=4.
  const AnalyticEstimate e = textbook_estimate(4096, 1024, 32, 2, 2, 4);
  CHECK(e.M_a == 1024.0 * 1024 * 1024);
  REQUIRE(e.M_c);
  CHECK(*e.M_c == 0.125 * 1024 * 1024 * 1024);
  CHECK(*e.T_c_ratio == 5.0);
  CHECK(!textbook_estimate(4096, 1024, 32, 2, 2, std::nullopt).M_c);
}

TEST_CASE("layout: arena over liveness lower bound on GPT presets") {
  // Printed for the record; the goal is <= 1.03 and these presets measure 1.0000 except gpt2-xl
  // every:4 (1.0092). Asserted at 1.03: the greedy is a heuristic, but on these uniform chains a
  // ratio past the goal means the layout regressed.
  for (const char* preset : {"gpt2", "gpt2-medium", "gpt2-xl"}) {
    TrainShape s;
    s.batch = 4;
    s.seq = 1024;
    const Graph g = build_training_gpt(ModelConfig::preset(preset), s);
    for (const char* pol : {"none", "every:1", "every:4", "sqrt", "selective"}) {
      const Plan p = plan_graph(g, {Policy::parse(pol), std::nullopt, 256, nullptr});
      const double ratio =
          static_cast<double>(p.arena_bytes) / static_cast<double>(p.arena_lower_bound);
      std::printf("layout %-12s %-10s arena %12llu  lower bound %12llu  ratio %.4f\n", preset, pol,
                  static_cast<unsigned long long>(p.arena_bytes),
                  static_cast<unsigned long long>(p.arena_lower_bound), ratio);
      CHECK(ratio <= 1.03);
    }
  }
}

}  // namespace remat

// Choosing the delta rule's chunk length: the candidates, the binding limit, and the choice
// against planning every candidate by hand.
#include "planner/delta_chunk.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "planner/budget_error.h"
#include "tests/graph/random_qwen35.h"

namespace remat {

TEST_CASE("delta chunk: candidates are one chunk, then powers of two from 8 below T") {
  CHECK(delta_chunk_candidates(512) == std::vector<int>{0, 256, 128, 64, 32, 16, 8});
  CHECK(delta_chunk_candidates(100) == std::vector<int>{0, 64, 32, 16, 8});
  CHECK(delta_chunk_candidates(9) == std::vector<int>{0, 8});
  CHECK(delta_chunk_candidates(8) == std::vector<int>{0});
}

TEST_CASE("delta chunk: the states and the workspace must each fit one binding") {
  // Qwen3.5-0.8B at B 4, T 512: one state is 4 x 16 x 128 x 128 floats, 4 MiB.
  const ModelConfig m = ModelConfig::preset("qwen3.5-0.8b");
  const TrainShape s{4, 512};
  const uint64_t mib128 = uint64_t(1) << 27;
  // The workspace's largest part (graph/delta_rule_workspace.h): the recomputed states, 2 sqrt(L)
  // of them, or the partial sums, L x 2304 floats per head (8 column blocks of 16).
  CHECK_FALSE(delta_chunk_fits_binding(m, s, 0, mib128));    // 46 states 184 MiB, sums 302 MiB
  CHECK_FALSE(delta_chunk_fits_binding(m, s, 256, mib128));  // 32 states 128 MiB, sums 151 MiB
  CHECK(delta_chunk_fits_binding(m, s, 128, mib128));        // 23 states 92 MiB, sums 75.5 MiB
  CHECK(delta_chunk_fits_binding(m, s, 64, mib128));         // 16 states; 7 starts 28 MiB
  CHECK(delta_chunk_fits_binding(m, s, 32, mib128));         // 15 starts 60 MiB
  CHECK(delta_chunk_fits_binding(m, s, 16, mib128));         // 31 starts 124 MiB
  CHECK_FALSE(delta_chunk_fits_binding(m, s, 8, mib128));    // 63 starts: 252 MiB
  CHECK(delta_chunk_fits_binding(m, s, 0, 0));
}

TEST_CASE("delta chunk: the choice is the best of the candidates planned one by one") {
  const testing::Qwen35Case c = testing::tiny_qwen35(0);
  SessionPlanRequest unbudgeted;
  unbudgeted.policy = Policy::parse("none");
  unbudgeted.max_binding_bytes = 0;
  uint64_t smallest = UINT64_MAX;
  int smallest_chunk = -1;
  for (int chunk : delta_chunk_candidates(c.shape.seq)) {
    TrainShape s = c.shape;
    s.delta_chunk = chunk;
    const uint64_t arena = plan_session(c.model, s, {}, unbudgeted).plan.arena_bytes;
    if (arena < smallest) smallest = arena, smallest_chunk = chunk;
  }
  const SessionPlan chosen = plan_session_choosing_delta_chunk(c.model, c.shape, {}, unbudgeted);
  CHECK(chosen.plan.arena_bytes == smallest);
  CHECK(chosen.shape.delta_chunk == smallest_chunk);
  // Under an arena budget: the fastest plan that fits it.
  SessionPlanRequest budgeted = unbudgeted;
  budgeted.policy = Policy::parse("auto");
  budgeted.arena_budget = smallest * 2;
  const SessionPlan fast = plan_session_choosing_delta_chunk(c.model, c.shape, {}, budgeted);
  CHECK(fast.plan.arena_bytes <= smallest * 2);
  for (int chunk : delta_chunk_candidates(c.shape.seq)) {
    TrainShape s = c.shape;
    s.delta_chunk = chunk;
    try {
      CHECK(fast.plan.report.predicted_seconds <=
            plan_session(c.model, s, {}, budgeted).plan.report.predicted_seconds);
    } catch (const std::invalid_argument&) {
      // this length does not fit the budget: not a candidate
    }
  }
  // A device that runs at most 5 steps a call: only the chunks of 4 (none of the candidates from
  // 8) would run, so no length is chosen; 8 steps allow 8 alone.
  SessionPlanRequest capped = unbudgeted;
  capped.max_delta_steps = 5;
  CHECK_THROWS_WITH(plan_session_choosing_delta_chunk(c.model, c.shape, {}, capped),
                    Catch::Contains("5 steps at most"));
  capped.max_delta_steps = 8;
  CHECK(plan_session_choosing_delta_chunk(c.model, c.shape, {}, capped).shape.delta_chunk == 8);
  // A model without the recurrence is planned as given.
  SessionPlanRequest plain = unbudgeted;
  const SessionPlan llama = plan_session_choosing_delta_chunk(ModelConfig::preset("llama-tiny"),
                                                              TrainShape{2, 16}, {}, plain);
  CHECK(llama.plan.report.delta_chunk == 0);
}

// The minimum each candidate length reports under `request` (every candidate must miss it).
static std::vector<uint64_t> candidate_minimums(const testing::Qwen35Case& c,
                                                const SessionPlanRequest& request) {
  std::vector<uint64_t> out;
  for (int chunk : delta_chunk_candidates(c.shape.seq)) {
    TrainShape s = c.shape;
    s.delta_chunk = chunk;
    try {
      plan_session(c.model, s, {}, request);
      FAIL("chunk " << chunk << " met a budget meant to be too small");
    } catch (const BudgetBelowMinimum& e) {
      out.push_back(e.minimum);
    }
  }
  return out;
}

TEST_CASE("delta chunk: a budget no length meets reports the smallest minimum over the lengths") {
  const testing::Qwen35Case c = testing::tiny_qwen35(0);
  SessionPlanRequest request;
  request.policy = Policy::parse("auto");
  request.max_binding_bytes = 0;
  request.choose_loss_chunk = true;
  for (const bool memory : {true, false}) {
    SessionPlanRequest r = request;
    if (memory)
      r.memory_budget = 1;
    else
      r.arena_budget = 1;
    const std::vector<uint64_t> minimums = candidate_minimums(c, r);
    const uint64_t least = *std::min_element(minimums.begin(), minimums.end());
    // The last length tried (the shortest) is not the smallest, so reporting it would be wrong.
    REQUIRE(minimums.back() != least);
    try {
      plan_session_choosing_delta_chunk(c.model, c.shape, {}, r);
      FAIL("a budget of one byte planned");
    } catch (const BudgetBelowMinimum& e) {
      CHECK(e.minimum == least);
      CHECK_THAT(e.what(), Catch::Contains(std::to_string(least) + " bytes"));
      CHECK_THAT(e.what(), Catch::Contains("delta-rule chunk lengths tried"));
    }
    // A budget of that minimum plans.
    if (memory)
      r.memory_budget = least;
    else
      r.arena_budget = least;
    CHECK_NOTHROW(plan_session_choosing_delta_chunk(c.model, c.shape, {}, r));
  }
}

}  // namespace remat

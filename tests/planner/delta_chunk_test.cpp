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

// Every candidate is a multiple of the chunkwise kernels' 64-token block, or T whole.
TEST_CASE("delta chunk: candidates are one chunk, then powers of two from 64 below T") {
  CHECK(delta_chunk_candidates(512) == std::vector<int>{0, 256, 128, 64});
  CHECK(delta_chunk_candidates(100) == std::vector<int>{0, 64});
  CHECK(delta_chunk_candidates(65) == std::vector<int>{0, 64});
  CHECK(delta_chunk_candidates(64) == std::vector<int>{0});
  CHECK(delta_chunk_candidates(9) == std::vector<int>{0});
}

TEST_CASE("delta chunk: the states and the workspace must each fit one binding") {
  // Qwen3.5-0.8B at B 4, T 512: one state is 4 x 16 x 128 x 128 floats, 4 MiB.
  const ModelConfig m = ModelConfig::preset("qwen3.5-0.8b");
  const TrainShape s{4, 512};
  const uint64_t mib128 = uint64_t(1) << 27;
  // The workspaces' largest part (graph/delta_rule_workspace.h): the backward's kept block
  // values, 69,952 floats per (row, head, block) of 64 tokens, 273.25 KiB.
  CHECK_FALSE(delta_chunk_fits_binding(m, s, 0, mib128));  // 8 blocks: 136.6 MiB
  CHECK(delta_chunk_fits_binding(m, s, 256, mib128));      // 68.3 MiB; 1 start 4 MiB
  CHECK(delta_chunk_fits_binding(m, s, 128, mib128));      // 34.2 MiB; 3 starts 12 MiB
  CHECK(delta_chunk_fits_binding(m, s, 64, mib128));       // 7 starts 28 MiB
  CHECK(delta_chunk_fits_binding(m, s, 0, 0));
  // At B 32 the 64-token chunks' starts take 7 x 32 MiB.
  CHECK_FALSE(delta_chunk_fits_binding(m, TrainShape{32, 512}, 64, mib128));
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
  // A device that runs at most 63 steps a call: none of the candidates from 64 would run, so no
  // length is chosen; 100 steps allow 64 alone (T 128 whole is too long).
  SessionPlanRequest capped = unbudgeted;
  capped.max_delta_steps = 63;
  CHECK_THROWS_WITH(plan_session_choosing_delta_chunk(c.model, c.shape, {}, capped),
                    Catch::Contains("63 steps at most"));
  capped.max_delta_steps = 100;
  CHECK(plan_session_choosing_delta_chunk(c.model, c.shape, {}, capped).shape.delta_chunk == 64);
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
  // Heads of 256 over T 4096: a state is large beside the rest of a tiny layer, so the shortest
  // chunks' many states outweigh their small workspaces and the shortest is not the least.
  testing::Qwen35Case c = testing::tiny_qwen35(0);
  c.model.ctx = c.shape.seq = 4096;
  c.model.qwen35_layers.linear_key_head_dim = c.model.qwen35_layers.linear_value_head_dim = 256;
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
    for (uint64_t m : minimums) UNSCOPED_INFO("minimum " << m);
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

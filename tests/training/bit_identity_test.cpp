// The central guarantee: checkpointing changes memory and time, never results. The same seed,
// data and steps under every policy and arena give byte-identical weights.
#include <catch2/catch.hpp>

#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"
#include "tests/training/policy_run.h"

using namespace remat;

namespace {

// Odd sizes everywhere (no tile multiple): L=3, C=48, 3 heads, V=101, T=23, B=3.
SessionConfig odd_config(float dropout) {
  SessionConfig c;
  c.model = ModelConfig{3, 48, 3, 101, 32};
  c.shape.batch = 3;
  c.shape.seq = 23;
  c.shape.dropout = dropout;
  c.optimizer.lr = 1e-2;
  c.optimizer.weight_decay = 0.1;
  c.optimizer.grad_clip = 1.0f;
  c.seed = 1234;
  return c;
}

}  // namespace

TEST_CASE("weights are byte-identical across policies and arenas after 3 AdamW steps") {
  test::check_all_policies_identical(odd_config(0.0f));
}

TEST_CASE("with dropout 0.1, recomputed masks keep weights byte-identical across policies") {
  test::check_all_policies_identical(odd_config(0.1f));
}

TEST_CASE("the minimum arena really forces recomputation") {
  SessionConfig c = odd_config(0.0f);
  c.policy = Policy::parse("auto");
  c.arena_budget = minimum_arena_bytes(c.model, c.shape, session_alignment(test::device()));
  Session s(test::device(), c);
  CHECK(s.plan().report.recompute_flops > 0);
  c.policy = Policy::parse("none");
  c.arena_budget.reset();
  Session none(test::device(), c);
  CHECK(none.plan().arena_bytes > s.plan().arena_bytes);
}

// Whole training steps with each bias gradient summed in its weight gradient's dispatch
// (SessionConfig::fused_bias_grad, the default) against a bias-gradient dispatch of its own:
// the same losses, gradient norms and parameters bit for bit, with gradient accumulation (the
// later micro-batches add) and under checkpointing, and one dispatch fewer per biased matmul on
// a device whose texel matmuls take it.
#include <catch2/catch.hpp>

#include <cstring>

#include "runtime/session.h"
#include "tests/support/test_device.h"
#include "tests/training/policy_run.h"
#include "tests/training/steps_run.h"

using namespace remat;

namespace {

using Run = test::StepsRun;

Run train(SessionConfig c, bool fused) {
  c.fused_bias_grad = fused;
  const Run r = test::train_three_steps(c, 700, 800);
  return r;
}

}  // namespace

TEST_CASE("bias gradients summed in the weight gradients' dispatches train to the same bits") {
  struct Case {
    const char* name;
    int accum;
    const char* policy;
  };
  const Case cases[] = {
      {"one micro-batch", 1, "none"},
      {"two micro-batches", 2, "none"},
      {"every block recomputed", 1, "every:1"},
  };
  for (const Case& k : cases) {
    DYNAMIC_SECTION(k.name) {
      SessionConfig c = test::odd_gpt2_session();
      c.accum = k.accum;
      c.policy = Policy::parse(k.policy);
      const Run want = train(c, false), got = train(c, true);
      test::require_same_steps(got, want);
      // GPT-2's four biased matmuls per block (c_attn, attn.c_proj, c_fc, mlp.c_proj), 3 blocks,
      // once per recorded forward-backward (two with accumulation): where the texel matmuls run,
      // each loses its bias-gradient dispatch.
      if (test::device().plan().quirks.texel_fetch_beats_storage_loads)
        REQUIRE(got.dispatches + 12 * std::size_t(k.accum) == want.dispatches);
      else
        REQUIRE(got.dispatches == want.dispatches);
    }
  }
}

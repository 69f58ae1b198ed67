// Whole training steps with the optimizer as one AdamW and one gradient-norm dispatch per
// binding window (SessionConfig::fused_optimizer, the default) against one of each per
// parameter: the same losses, gradient norms and parameters bit for bit, clipped and not, with
// gradient accumulation, and with a binding limit that makes several windows and cuts wte in
// pieces. And the step really records fewer dispatches.
#include <catch2/catch.hpp>

#include <cstring>

#include "runtime/session.h"
#include "tests/support/test_device.h"
#include "tests/training/policy_run.h"
#include "tests/training/steps_run.h"

using namespace remat;

namespace {

using Run = test::StepsRun;
using test::same_floats;

Run train(SessionConfig c, bool fused) {
  c.fused_optimizer = fused;
  const Run r = test::train_three_steps(c, 500, 600);
  CHECK(r.memory.device_bytes_allocated == r.memory.planned_total_bytes);
  return r;
}

bool same_weights(const Run& a, const Run& b) {
  if (a.weights.size() != b.weights.size()) return false;
  for (std::size_t i = 0; i < a.weights.size(); ++i)
    if (a.weights[i].first != b.weights[i].first ||
        !same_floats(a.weights[i].second, b.weights[i].second))
      return false;
  return true;
}

}  // namespace

TEST_CASE("the fused optimizer trains to the per-parameter optimizer's bits") {
  struct Case {
    const char* name;
    float clip;
    int accum;
    uint64_t max_binding;  // 0: the device's
  };
  const Case cases[] = {
      {"clipped", 0.5f, 1, 0},
      {"not clipped", 0.0f, 1, 0},
      {"clipped, two micro-batches", 0.5f, 2, 0},
      // A smaller model (tests/training/wte_pieces_training_test.cpp's): wte (261 x 24 floats)
      // in three pieces, every operand in several windows.
      {"clipped, 12,000-byte bindings", 0.5f, 1, 12'000},
  };
  for (const Case& k : cases) {
    DYNAMIC_SECTION(k.name) {
      SessionConfig c = test::odd_gpt2_session();
      if (k.max_binding) {
        c.model = ModelConfig{2, 24, 2, 261, 16};
        c.shape.batch = 2;
        c.shape.seq = 5;
      }
      c.optimizer.grad_clip = k.clip;
      c.accum = k.accum;
      c.max_binding_bytes = k.max_binding;
      const Run want = train(c, false), got = train(c, true);
      for (float l : want.losses) REQUIRE(std::isfinite(l));
      if (k.clip > 0) REQUIRE(want.norms[0] > k.clip);  // the first step really clips
      REQUIRE(same_floats(got.losses, want.losses));
      REQUIRE(same_floats(got.norms, want.norms));
      REQUIRE(same_weights(got, want));
      // 3 layers of 12 parameters, 4 more (wte, wpe, ln_f): 40 AdamW and 40 partial-sum
      // dispatches become one of each per window.
      if (k.max_binding == 0) REQUIRE(got.dispatches + 2 * 39 == want.dispatches);
      REQUIRE(got.dispatches < want.dispatches);
    }
  }
}

// Whole training steps with each bias gradient summed in its weight gradient's dispatch
// (SessionConfig::fused_bias_grad, the default) against a bias-gradient dispatch of its own:
// the same losses, gradient norms and parameters bit for bit, with gradient accumulation (the
// later micro-batches add) and under checkpointing, and one dispatch fewer per biased matmul on
// a device whose texel matmuls take it.
#include <catch2/catch.hpp>

#include <cstring>

#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"
#include "tests/training/policy_run.h"

using namespace remat;

namespace {

struct Run {
  std::vector<float> losses, norms;
  std::vector<std::pair<std::string, std::vector<float>>> weights;
  std::size_t dispatches = 0;
};

Run train(SessionConfig c, bool fused) {
  c.fused_bias_grad = fused;
  Session s(test::device(), c);
  Run r;
  r.dispatches = s.dispatch_count();
  const std::size_t n = std::size_t(c.shape.batch) * c.shape.seq * std::max(c.accum, 1);
  for (uint32_t step = 0; step < 3; ++step) {
    const auto tokens = test::random_indices(n, 700 + step, uint32_t(c.model.vocab));
    const auto targets = test::random_indices(n, 800 + step, uint32_t(c.model.vocab));
    r.losses.push_back(s.step(tokens, targets));
    r.norms.push_back(s.last_grad_norm());
  }
  r.weights = s.parameters();
  return r;
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
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
      for (float l : want.losses) REQUIRE(std::isfinite(l));
      REQUIRE(same_floats(got.losses, want.losses));
      REQUIRE(same_floats(got.norms, want.norms));
      REQUIRE(got.weights.size() == want.weights.size());
      for (std::size_t i = 0; i < want.weights.size(); ++i) {
        INFO(want.weights[i].first);
        REQUIRE(got.weights[i].first == want.weights[i].first);
        REQUIRE(same_floats(got.weights[i].second, want.weights[i].second));
      }
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

// Whole training steps with the token embedding bound in pieces (forced on a tiny model by
// SessionConfig::max_binding_bytes, as lavapipe forces them on GPT-2): losses and weights against
// the unsplit session, bit-identical reruns, and a clear error for a plan whose activations
// cannot be bound at all.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// wte is 261 × 24 floats = 25,056 bytes; the largest other tensor bound whole is the logits,
// 10 × 261 floats = 10,440 bytes. A 12,000-byte limit splits wte (and its gradient and AdamW
// moments) into pieces of 120, 120 and 21 rows and nothing else.
constexpr uint64_t kLimit = 12'000;

SessionConfig tiny(bool clip) {
  SessionConfig c;
  c.model = ModelConfig{2, 24, 2, 261, 16};
  c.shape.batch = 2;
  c.shape.seq = 5;
  c.optimizer.lr = 1e-2;
  c.optimizer.weight_decay = 0.1;
  c.optimizer.grad_clip = clip ? 0.5f : 0.0f;
  c.seed = 77;
  return c;
}

struct Run {
  std::vector<float> losses, norms;
  std::vector<std::pair<std::string, std::vector<float>>> weights;
  std::size_t dispatches = 0;
};

Run train(SessionConfig c, uint64_t max_binding_bytes) {
  c.max_binding_bytes = max_binding_bytes;
  Session s(test::device(), c);
  Run r;
  r.dispatches = s.dispatch_count();
  const std::size_t n = std::size_t(c.shape.batch) * c.shape.seq;
  for (uint32_t step = 0; step < 3; ++step) {
    const auto tokens = test::random_indices(n, 300 + step, uint32_t(c.model.vocab));
    const auto targets = test::random_indices(n, 400 + step, uint32_t(c.model.vocab));
    r.losses.push_back(s.step(tokens, targets));
    r.norms.push_back(s.last_grad_norm());
  }
  r.weights = s.parameters();
  return r;
}

std::size_t dispatches(SessionConfig c, uint64_t max_binding_bytes, bool fused_optimizer) {
  c.max_binding_bytes = max_binding_bytes;
  c.fused_optimizer = fused_optimizer;
  return Session(test::device(), c).dispatch_count();
}

bool same_weights(const Run& a, const Run& b) {
  if (a.weights.size() != b.weights.size()) return false;
  for (std::size_t i = 0; i < a.weights.size(); ++i) {
    const auto& x = a.weights[i].second;
    const auto& y = b.weights[i].second;
    if (x.size() != y.size() || std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) != 0)
      return false;
  }
  return true;
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("training with wte bound in pieces matches the unsplit session") {
  for (bool clip : {false, true}) {
    DYNAMIC_SECTION("grad clip " << clip) {
      const Run whole = train(tiny(clip), 0);
      const Run split = train(tiny(clip), kLimit);
      // Pieces really happen: the embedding (forward and backward), the head (forward, dx, dW),
      // and, one dispatch per parameter, AdamW and the gradient norm take three dispatches each
      // for wte instead of one. The fused optimizer binds every operand in 12,000-byte windows
      // instead, one AdamW and one partial-sums dispatch per window.
      REQUIRE(dispatches(tiny(clip), kLimit, false) == dispatches(tiny(clip), 0, false) + 7 * 2);
      REQUIRE(split.dispatches > whole.dispatches + 5 * 2);
      for (float l : whole.losses) REQUIRE(std::isfinite(l));
      // The step-1 loss comes before any update: the forward's logits are bit for bit the same.
      REQUIRE(split.losses[0] == whole.losses[0]);
      // The gradient norm groups wte's squares by piece: the same sum within float rounding.
      for (std::size_t i = 0; i < whole.norms.size(); ++i)
        REQUIRE(std::abs(split.norms[i] - whole.norms[i]) <= 1e-6f * whole.norms[i]);
      if (!clip) {
        // Nothing else is reordered: every gradient, update and later loss has the same bits.
        REQUIRE(same_floats(split.losses, whole.losses));
        REQUIRE(same_weights(split, whole));
      } else {
        // The norm sets the clip scale, so later steps may differ by rounding, nothing more.
        for (std::size_t i = 0; i < whole.losses.size(); ++i)
          REQUIRE(std::abs(split.losses[i] - whole.losses[i]) <= 1e-5f * whole.losses[i]);
      }
      // The split session is deterministic in its own right.
      const Run again = train(tiny(clip), kLimit);
      REQUIRE(same_floats(again.losses, split.losses));
      REQUIRE(same_floats(again.norms, split.norms));
      REQUIRE(same_weights(again, split));
    }
  }
}

TEST_CASE("a plan with a tensor too large for one binding is refused with what to change") {
  // c_fc's weight (24 × 96 floats, 9,216 bytes) fits 10,000 bytes; the logits (10,440) do not,
  // and activations cannot be bound in pieces.
  REQUIRE_THROWS_WITH(train(tiny(false), 10'000), Catch::Contains("'head.logits'") &&
                                                      Catch::Contains("smaller --batch or --seq"));
  // At 8,000 bytes c_fc's (in, out) weight, bound whole, is the first that does not fit.
  REQUIRE_THROWS_WITH(train(tiny(false), 8'000),
                      Catch::Contains("'h.0.mlp.c_fc.weight'") && Catch::Contains("smaller model"));
}

// Session::evaluate measures the loss without training: it equals the loss a step reports before
// its update, and a run that evaluates between steps trains exactly like one that never does.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// Odd sizes, a recomputing policy, and (when asked) dropout and gradient accumulation, so the
// evaluation's forward pass shares arena bytes with recomputed activations and gradients.
SessionConfig config(float dropout, int accum) {
  SessionConfig c;
  c.model = ModelConfig{3, 48, 3, 101, 32};
  c.shape.batch = 3;
  c.shape.seq = 23;
  c.shape.dropout = dropout;
  c.policy = Policy::parse("every:2");
  c.accum = accum;
  c.optimizer.lr = 1e-2;
  c.optimizer.weight_decay = 0.1;
  c.optimizer.grad_clip = 1.0f;
  c.seed = 99;
  return c;
}

std::vector<uint32_t> ids(const SessionConfig& c, uint64_t seed, int micro = 1) {
  const std::size_t n = std::size_t(c.shape.batch) * c.shape.seq * micro;
  return test::random_indices(n, seed, uint32_t(c.model.vocab));
}

struct Trace {
  std::vector<float> losses, norms;
  std::vector<std::pair<std::string, std::vector<float>>> parameters;
};

// Four steps; with `evaluate`, two evaluations on held-out batches after each of the first two.
Trace train(const SessionConfig& c, bool evaluate) {
  Session s(test::device(), c);
  Trace t;
  for (uint32_t step = 0; step < 4; ++step) {
    t.losses.push_back(s.step(ids(c, 10 + step, c.accum), ids(c, 20 + step, c.accum)));
    t.norms.push_back(s.last_grad_norm());
    if (evaluate && step < 2) {
      const float a = s.evaluate(ids(c, 30 + step), ids(c, 40 + step));
      CHECK(s.evaluate(ids(c, 50), ids(c, 60)) > 0);
      CHECK(std::isfinite(a));
      // The gradient norm of the last step is still the one reported.
      CHECK(s.last_grad_norm() == t.norms.back());
      const MemoryReport m = s.memory();
      CHECK(m.device_bytes_allocated == m.planned_total_bytes);
    }
  }
  t.parameters = s.parameters();
  return t;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("evaluate gives the loss the next step reports, without updating the weights") {
  const SessionConfig c = config(0.0f, 1);
  Session s(test::device(), c);
  const auto tokens = ids(c, 1), targets = ids(c, 2);
  const auto before = s.parameters();
  const float evaluated = s.evaluate(tokens, targets);
  CHECK(s.evaluate(tokens, targets) == evaluated);
  const auto after = s.parameters();
  REQUIRE(before.size() == after.size());
  for (std::size_t i = 0; i < before.size(); ++i)
    CHECK(same_bits(before[i].second, after[i].second));
  // The same forward kernels on the same weights: bit for bit the step's loss.
  CHECK(s.step(tokens, targets) == evaluated);
  CHECK(s.steps_done() == 1);
  // The update lowered the loss on the batch it saw.
  CHECK(s.evaluate(tokens, targets) < evaluated);
}

TEST_CASE("training with evaluations in between is bit-identical to training without") {
  for (const auto& [dropout, accum] : {std::pair{0.0f, 1}, std::pair{0.2f, 2}}) {
    INFO("dropout " << dropout << ", accum " << accum);
    const SessionConfig c = config(dropout, accum);
    const Trace plain = train(c, false), evaluated = train(c, true);
    CHECK(evaluated.losses == plain.losses);
    CHECK(evaluated.norms == plain.norms);
    REQUIRE(evaluated.parameters.size() == plain.parameters.size());
    for (std::size_t i = 0; i < plain.parameters.size(); ++i) {
      INFO(plain.parameters[i].first);
      CHECK(same_bits(evaluated.parameters[i].second, plain.parameters[i].second));
    }
  }
}

TEST_CASE("evaluate turns dropout off: the loss of the whole model, the same every time") {
  const SessionConfig c = config(0.5f, 1);
  SessionConfig no_dropout = c;
  no_dropout.shape.dropout = 0.0f;
  Session s(test::device(), c), plain(test::device(), no_dropout);
  const auto tokens = ids(c, 3), targets = ids(c, 4);
  // Same seed, same initial weights: with no mask drawn, the same loss as a model without
  // dropout, bit for bit.
  CHECK(s.evaluate(tokens, targets) == plain.evaluate(tokens, targets));
  s.step(ids(c, 5), ids(c, 6));
  const float trained = s.evaluate(tokens, targets);
  CHECK(s.evaluate(tokens, targets) == trained);
}

TEST_CASE("evaluate refuses a batch of the wrong size or outside the vocabulary") {
  const SessionConfig c = config(0.0f, 2);
  Session s(test::device(), c);
  CHECK_THROWS_WITH(s.evaluate(ids(c, 1, 2), ids(c, 2, 2)),
                    Catch::Contains("evaluating takes 69 tokens and targets"));
  auto bad = ids(c, 1);
  bad[5] = 101;
  CHECK_THROWS_WITH(s.evaluate(bad, ids(c, 2)),
                    Catch::Contains("token 101 at position 5 is outside the vocabulary of 101"));
}

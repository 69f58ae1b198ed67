// Loss masks: targets equal to kIgnoreTarget are not trained, and the loss of a step is the mean
// cross-entropy over the trained targets of all its micro-batches together, each target weighing
// the same (not the mean of per-micro-batch means). Masked steps stay byte-identical across
// checkpoint policies; batches that train nothing, and ids outside the vocabulary, are refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

#include "base/ignore_target.h"
#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"
#include "tests/training/update_difference.h"

using namespace remat;

namespace {

constexpr int kBatch = 3, kSeq = 23, kVocab = 101;
constexpr std::size_t kRows = std::size_t(kBatch) * kSeq;  // positions per micro-batch

SessionConfig config(int batch, int accum, const std::string& policy) {
  SessionConfig c;
  c.model = ModelConfig{2, 48, 3, kVocab, 32};
  c.shape.batch = batch;
  c.shape.seq = kSeq;
  c.accum = accum;
  c.policy = Policy::parse(policy);
  c.optimizer.lr = 1e-2;
  // eps 1 makes AdamW's update nearly linear in the gradient (accumulation_test.cpp says why).
  c.optimizer.eps = 1.0;
  c.seed = 91;
  return c;
}

// Two micro-batches of kRows positions with very unequal trained counts: micro-batch 0 trains 5
// positions (rows 1 and 2 of its 3 wholly ignored but one), micro-batch 1 trains 40 (its row 0
// wholly ignored, 6 positions of rows 1-2 too). Under a mean of per-micro-batch means micro-batch
// 0's targets would weigh 8 times as much as micro-batch 1's.
struct Batch {
  std::vector<uint32_t> tokens, targets;
};

Batch masked_batch(uint64_t seed) {
  Batch b{test::random_indices(2 * kRows, seed, kVocab),
          test::random_indices(2 * kRows, seed + 1, kVocab)};
  for (std::size_t i = 0; i < kRows; ++i)
    if (i != 0 && i != 7 && i != 15 && i != 22 && i != 50) b.targets[i] = kIgnoreTarget;
  for (std::size_t i = 0; i < kRows; ++i)
    if (i < std::size_t(kSeq) || i % 8 == 3) b.targets[kRows + i] = kIgnoreTarget;
  return b;
}

std::size_t trained(std::span<const uint32_t> targets) {
  std::size_t n = 0;
  for (uint32_t t : targets) n += t != kIgnoreTarget;
  return n;
}

using test::Parameters;
using test::worst_update_difference;

}  // namespace

TEST_CASE("the batches under test train 5 and 40 targets") {
  const Batch b = masked_batch(10);
  REQUIRE(trained(std::span(b.targets).first(kRows)) == 5);
  REQUIRE(trained(std::span(b.targets).last(kRows)) == 40);
}

TEST_CASE("a masked step's loss is the mean over the trained targets of both micro-batches") {
  Session s(test::device(), config(kBatch, 2, "none"));
  const Batch b = masked_batch(10);
  const auto tokens = std::span<const uint32_t>(b.tokens);
  const auto targets = std::span<const uint32_t>(b.targets);
  // Each trained position of micro-batch 0 alone: evaluate's mean over one target is its loss.
  double sum0 = 0;
  for (std::size_t i = 0; i < kRows; ++i) {
    if (targets[i] == kIgnoreTarget) continue;
    std::vector<uint32_t> one(kRows, kIgnoreTarget);
    one[i] = targets[i];
    sum0 += s.evaluate(tokens.first(kRows), one);
  }
  const double mean0 = s.evaluate(tokens.first(kRows), targets.first(kRows));
  const double mean1 = s.evaluate(tokens.last(kRows), targets.last(kRows));
  CHECK(mean0 == Approx(sum0 / 5).epsilon(1e-6));
  // The step's loss is measured before its update, on the same weights.
  const double loss = s.step(tokens, targets);
  CHECK(loss == Approx((5 * mean0 + 40 * mean1) / 45).epsilon(1e-6));
  CHECK(std::abs(loss - (mean0 + mean1) / 2) > 1e-3);  // the mean of means is another number
}

TEST_CASE("two masked micro-batches of 3 rows train like one masked batch of 6 rows") {
  const Batch b = masked_batch(10);
  const Parameters w0 = Session(test::device(), config(2 * kBatch, 1, "none")).parameters();
  Session whole(test::device(), config(2 * kBatch, 1, "none"));
  Session split(test::device(), config(kBatch, 2, "none"));
  for (int step = 0; step < 2; ++step) {
    const float a = whole.step(b.tokens, b.targets), c = split.step(b.tokens, b.targets);
    CHECK(c == Approx(a).epsilon(1e-5));
    CHECK(split.last_grad_norm() == Approx(whole.last_grad_norm()).epsilon(1e-5));
  }
  // Rounding apart (float sums in another order), the updates agree; a mean of per-micro-batch
  // means would weigh micro-batch 0's gradient 8 times as much and miss by far more.
  const double worst = worst_update_difference(whole.parameters(), split.parameters(), w0);
  INFO("worst difference of updates, relative to the tensor's largest update: " << worst);
  CHECK(worst < 1e-3);
  CHECK(split.parameters() != w0);
}

TEST_CASE("a wholly ignored micro-batch adds nothing: the step trains like the other alone") {
  // Its logits gradient is exactly 0, so every gradient it contributes is 0 and the
  // accumulation adds it without rounding: bit for bit the step of micro-batch 1 alone.
  Session split(test::device(), config(kBatch, 2, "none"));
  Session alone(test::device(), config(kBatch, 1, "none"));
  for (uint64_t step = 0; step < 2; ++step) {
    Batch b = masked_batch(10 + 2 * step);
    std::fill(b.targets.begin(), b.targets.begin() + kRows, kIgnoreTarget);
    const float a = split.step(b.tokens, b.targets);
    const float c = alone.step(std::span(b.tokens).last(kRows), std::span(b.targets).last(kRows));
    CHECK(a == c);
    CHECK(split.last_grad_norm() == alone.last_grad_norm());
  }
  CHECK(split.parameters() == alone.parameters());
}

TEST_CASE("masked, accumulated steps give byte-identical weights across policies") {
  auto with_dropout = [](const std::string& policy) {
    SessionConfig c = config(kBatch, 2, policy);
    c.shape.dropout = 0.1f;  // recomputed forwards must redraw the masks of the first
    return c;
  };
  const SessionConfig base = with_dropout("none");
  const uint64_t minimum =
      minimum_arena_bytes(base.model, base.shape, session_alignment(test::device()));
  auto train = [&](const std::string& policy, std::optional<uint64_t> arena) {
    SessionConfig c = with_dropout(policy);
    c.arena_budget = arena;
    c.optimizer.grad_clip = 0.5;
    Session s(test::device(), c);
    std::vector<float> losses;
    for (uint64_t step = 0; step < 3; ++step) {
      const Batch b = masked_batch(10 + 2 * step);
      losses.push_back(s.step(b.tokens, b.targets));
    }
    return std::make_pair(losses, s.parameters());
  };
  const auto none = train("none", std::nullopt);
  for (float l : none.first) REQUIRE(std::isfinite(l));
  CHECK(train("every:1", std::nullopt) == none);
  Session at_minimum(test::device(), [&] {
    SessionConfig c = with_dropout("auto");
    c.arena_budget = minimum;
    return c;
  }());
  CHECK(at_minimum.plan().report.recompute_flops > 0);
  CHECK(train("auto", minimum) == none);
}

TEST_CASE("a step or evaluation that trains no target is refused before anything runs") {
  Session s(test::device(), config(kBatch, 2, "none"));
  const Parameters before = s.parameters();
  const Batch b = masked_batch(10);
  const std::vector<uint32_t> none(2 * kRows, kIgnoreTarget);
  CHECK_THROWS_WITH(s.step(b.tokens, none),
                    "a step needs at least one trained target, but all 138 are the ignored "
                    "target 0xFFFFFFFF");
  CHECK_THROWS_WITH(s.evaluate(std::span(b.tokens).first(kRows), std::span(none).first(kRows)),
                    "evaluating needs at least one trained target, but all 69 are the ignored "
                    "target 0xFFFFFFFF");
  CHECK(s.steps_done() == 0);
  CHECK(s.parameters() == before);
  // One micro-batch wholly ignored is fine: the other one trains.
  std::vector<uint32_t> half = b.targets;
  std::fill(half.begin(), half.begin() + kRows, kIgnoreTarget);
  CHECK(std::isfinite(s.step(b.tokens, half)));
  CHECK(s.steps_done() == 1);
}

TEST_CASE("only kIgnoreTarget may lie outside the vocabulary, and only as a target") {
  Session s(test::device(), config(kBatch, 2, "none"));
  Batch b = masked_batch(10);
  b.targets[70] = kVocab;
  CHECK_THROWS_WITH(s.step(b.tokens, b.targets),
                    "token 101 at position 70 is outside the vocabulary of 101");
  b.targets[70] = kVocab - 1;
  b.tokens[3] = kIgnoreTarget;
  CHECK_THROWS_WITH(s.step(b.tokens, b.targets),
                    "token 4294967295 at position 3 is outside the vocabulary of 101");
  CHECK(s.steps_done() == 0);
}

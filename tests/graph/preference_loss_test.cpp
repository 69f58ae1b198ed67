// DPO and KTO on the host: values against cases worked by hand, each row's coefficient against
// central finite differences of the batch loss, and TRL's metrics.
#include "graph/preference_loss.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>

using namespace remat;

namespace {

struct Pairs {
  std::vector<double> pc, pr, rc, rr;
};

Pairs random_pairs(std::size_t b, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-40.0, -2.0);
  Pairs p;
  for (std::size_t i = 0; i < b; ++i) {
    p.pc.push_back(u(rng));
    p.pr.push_back(u(rng));
    p.rc.push_back(u(rng));
    p.rr.push_back(u(rng));
  }
  return p;
}

double dpo_loss(const Pairs& p, const DpoOptions& o) {
  return dpo_step(p.pc, p.pr, p.rc, p.rr, o).loss;
}

// The step is smooth in each log-prob: a central difference with h = 1e-4 errs by about
// h² · |ℓ'''| / 6 ≈ 1e-10 here (β ≤ 1), and rounding adds about 1e-16 / h.
constexpr double kStep = 1e-4;
constexpr double kDifferenceError = 1e-9;

}  // namespace

TEST_CASE("dpo: equal log-ratios lose log 2 whatever the smoothing", "[graph]") {
  const std::vector<double> pc{-3, -7}, pr{-5, -9}, rc{-3, -7}, rr{-5, -9};
  for (double eps : {0.0, 0.1, 0.5}) {
    const PreferenceStep s = dpo_step(pc, pr, rc, rr, {0.25, eps});
    CHECK(s.loss == Approx(std::log(2.0)).epsilon(1e-15));
    // dℓ/dz at z = 0 is β(2ε − 1)/2; the loss is a mean over B = 2 pairs.
    const double dz = 0.25 * (2 * eps - 1) / 2;
    REQUIRE(s.row_coefficients.size() == 4);
    CHECK(s.row_coefficients[0] == Approx(dz / 2).epsilon(1e-15));
    CHECK(s.row_coefficients[1] == Approx(dz / 2).epsilon(1e-15));
    CHECK(s.row_coefficients[2] == Approx(-dz / 2).epsilon(1e-15));
    CHECK(s.row_coefficients[3] == Approx(-dz / 2).epsilon(1e-15));
    CHECK(s.metric("rewards/accuracies") == 0.0);
    CHECK(s.metric("rewards/margins") == 0.0);
  }
}

TEST_CASE("dpo: a margin of log 3 over beta loses log(4/3)", "[graph]") {
  // βz = log 3: σ(βz) = 3/4, so ℓ = log(4/3) and dℓ/dz = −β/4.
  const double beta = 0.5, z = std::log(3.0) / beta;
  const std::vector<double> pc{-2 + z}, pr{-6}, rc{-2}, rr{-6};
  const PreferenceStep s = dpo_step(pc, pr, rc, rr, {beta, 0});
  CHECK(s.loss == Approx(std::log(4.0 / 3.0)).epsilon(1e-14));
  CHECK(s.row_coefficients[0] == Approx(-beta / 4).epsilon(1e-14));
  CHECK(s.row_coefficients[1] == Approx(beta / 4).epsilon(1e-14));
  CHECK(s.metric("rewards/chosen") == Approx(std::log(3.0)).epsilon(1e-14));
  CHECK(s.metric("rewards/rejected") == 0.0);
  CHECK(s.metric("rewards/accuracies") == 1.0);
  CHECK(s.metric("logps/chosen") == pc[0]);
  CHECK(s.metric("logps/rejected") == -6.0);
  // Smoothing ε = 0.25: −(3/4) log(3/4) − (1/4) log(1/4).
  const PreferenceStep smooth = dpo_step(pc, pr, rc, rr, {beta, 0.25});
  CHECK(smooth.loss == Approx(-0.75 * std::log(0.75) - 0.25 * std::log(0.25)).epsilon(1e-14));
}

TEST_CASE("dpo: metrics are TRL's means over the pairs", "[graph]") {
  const std::vector<double> pc{-10, -20, -5}, pr{-12, -15, -5}, rc{-11, -19, -6}, rr{-11, -16, -4};
  const PreferenceStep s = dpo_step(pc, pr, rc, rr, {0.1, 0});
  // Chosen rewards 0.1·(1, −1, 1), rejected 0.1·(−1, 1, −1): pairs 0 and 2 are won.
  CHECK(s.metric("rewards/chosen") == Approx(0.1 / 3).epsilon(1e-14));
  CHECK(s.metric("rewards/rejected") == Approx(-0.1 / 3).epsilon(1e-14));
  CHECK(s.metric("rewards/margins") == Approx(0.2 / 3).epsilon(1e-14));
  CHECK(s.metric("rewards/accuracies") == Approx(2.0 / 3).epsilon(1e-15));
  CHECK(s.metric("logps/chosen") == Approx(-35.0 / 3).epsilon(1e-15));
  CHECK(s.metric("logps/rejected") == Approx(-32.0 / 3).epsilon(1e-15));
  std::vector<std::string> names;
  for (const auto& m : s.metrics) names.push_back(m.first);
  CHECK(names == std::vector<std::string>{"rewards/chosen", "rewards/rejected",
                                          "rewards/accuracies", "rewards/margins", "logps/chosen",
                                          "logps/rejected"});
}

TEST_CASE("dpo: each row's coefficient is the batch loss's finite difference", "[graph]") {
  for (double eps : {0.0, 0.2}) {
    const DpoOptions o{0.7, eps};
    const Pairs p = random_pairs(5, 11);
    const PreferenceStep s = dpo_step(p.pc, p.pr, p.rc, p.rr, o);
    for (std::size_t i = 0; i < 5; ++i) {
      for (int side = 0; side < 2; ++side) {
        Pairs up = p, down = p;
        (side ? up.pr : up.pc)[i] += kStep;
        (side ? down.pr : down.pc)[i] -= kStep;
        const double fd = (dpo_loss(up, o) - dpo_loss(down, o)) / (2 * kStep);
        INFO("eps " << eps << " pair " << i << " side " << side);
        CHECK(std::abs(s.row_coefficients[side * 5 + i] - fd) < kDifferenceError);
        CHECK(std::abs(fd) > 1e-6);  // the difference sees the row at all
      }
    }
  }
}

TEST_CASE("dpo: the loss is a mean over pairs, exact for large margins", "[graph]") {
  const Pairs p = random_pairs(3, 5);
  Pairs twice = p;
  for (auto* v : {&twice.pc, &twice.pr, &twice.rc, &twice.rr})
    v->insert(v->end(), v->begin(), v->end());
  const PreferenceStep one = dpo_step(p.pc, p.pr, p.rc, p.rr, {});
  const PreferenceStep two = dpo_step(twice.pc, twice.pr, twice.rc, twice.rr, {});
  CHECK(two.loss == Approx(one.loss).epsilon(1e-15));
  CHECK(two.row_coefficients[0] == Approx(one.row_coefficients[0] / 2).epsilon(1e-15));
  // βz = −800: log σ underflows naively; ℓ = 800 + log1p(e^−800) = 800.
  const std::vector<double> a{0}, b{-8000}, zero{0};
  const PreferenceStep far = dpo_step(b, a, zero, zero, {0.1, 0});
  CHECK(far.loss == Approx(800.0).epsilon(1e-15));
  CHECK(far.row_coefficients[0] == Approx(-0.1).epsilon(1e-15));
  CHECK(log_sigmoid(800.0) == 0.0);
  CHECK(log_sigmoid(-800.0) == -800.0);
}

TEST_CASE("dpo: refuses empty or ragged batches and bad options", "[graph]") {
  const std::vector<double> one{-1}, two{-1, -2}, none;
  CHECK_THROWS_WITH(dpo_step(none, none, none, none, {}), Catch::Contains("no examples"));
  CHECK_THROWS_WITH(dpo_step(one, two, one, one, {}), Catch::Contains("2 values"));
  CHECK_THROWS_WITH(dpo_step(one, one, one, one, {0, 0}), Catch::Contains("beta"));
  CHECK_THROWS_WITH(dpo_step(one, one, one, one, {0.1, 0.6}), Catch::Contains("smoothing"));
}

namespace {

struct Feedback {
  std::vector<double> p, r, pkl, rkl;
  std::vector<uint8_t> good;
};

Feedback random_feedback(std::size_t b, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-30.0, -2.0);
  Feedback f;
  for (std::size_t i = 0; i < b; ++i) {
    f.p.push_back(u(rng));
    f.r.push_back(u(rng));
    f.pkl.push_back(u(rng));
    f.rkl.push_back(u(rng));
    f.good.push_back(i % 3 != 1);
  }
  return f;
}

PreferenceStep kto(const Feedback& f, const KtoOptions& o) {
  return kto_step(f.p, f.r, f.good, f.pkl, f.rkl, o);
}

}  // namespace

TEST_CASE("kto: policy equal to the reference loses one half, weighted", "[graph]") {
  Feedback f{{-4, -6, -8}, {-4, -6, -8}, {-9, -9, -9}, {-9, -9, -9}, {1, 0, 1}};
  const PreferenceStep s = kto(f, {0.2, 2.0, 3.0});
  // Each example loses w · (1 − σ(0)) = w/2: (2 + 3 + 2) / 2 over 3 examples.
  CHECK(s.loss == Approx(7.0 / 6).epsilon(1e-15));
  // d(1 − σ(±βr))/dr at 0 is ∓β/4.
  REQUIRE(s.row_coefficients.size() == 6);
  CHECK(s.row_coefficients[0] == Approx(-2.0 * 0.2 / 4 / 3).epsilon(1e-15));
  CHECK(s.row_coefficients[1] == Approx(3.0 * 0.2 / 4 / 3).epsilon(1e-15));
  CHECK(s.row_coefficients[2] == Approx(-2.0 * 0.2 / 4 / 3).epsilon(1e-15));
  for (int i = 3; i < 6; ++i) CHECK(s.row_coefficients[i] == 0.0);
  CHECK(s.metric("kl") == 0.0);
  CHECK(s.metric("rewards/chosen") == 0.0);
  CHECK(s.metric("logps/chosen") == Approx(-6.0).epsilon(1e-15));
  CHECK(s.metric("logps/rejected") == -6.0);
  CHECK(s.metric("rewards/margins") == 0.0);
}

TEST_CASE("kto: the reference point is the clamped mean of the KL rows", "[graph]") {
  // KL rows average π − ref = 2: a desirable answer with r = 2 sits on the reference point.
  Feedback f{{-3, -10}, {-5, -12}, {-1, -7}, {-4, -8}, {1, 1}};
  const PreferenceStep s = kto(f, {0.5, 1, 1});
  CHECK(s.metric("kl") == Approx(2.0).epsilon(1e-15));
  CHECK(s.loss == Approx(0.5).epsilon(1e-15));
  // Below zero it clamps: then the desirable loss is 1 − σ(β r) = 1 − σ(1).
  Feedback neg = f;
  neg.pkl = {-9, -9};
  const PreferenceStep c = kto(neg, {0.5, 1, 1});
  CHECK(c.metric("kl") == 0.0);
  CHECK(c.loss == Approx(1 - 1 / (1 + std::exp(-1.0))).epsilon(1e-15));
  CHECK(c.metric("rewards/chosen") == Approx(1.0).epsilon(1e-15));
  // Only desirable examples: no rejected metrics and no margin, as TRL logs them.
  std::vector<std::string> names;
  for (const auto& m : c.metrics) names.push_back(m.first);
  CHECK(names == std::vector<std::string>{"kl", "rewards/chosen", "logps/chosen"});
}

TEST_CASE("kto: a step at a given reference point is the step whose KL rows give it", "[graph]") {
  // Accumulated micro-batches share one reference point estimated over all their KL rows.
  Feedback f{{-3, -10, -2}, {-5, -12, -2.5}, {-1, -7, -3}, {-4, -8, -1}, {1, 0, 1}};
  const PreferenceStep whole = kto(f, {0.5, 1, 2});
  const double kl = kto_reference_point(f.pkl, f.rkl);
  CHECK(kl == Approx((3.0 + 1.0 - 2.0) / 3).epsilon(1e-15));
  CHECK(kl == whole.metric("kl"));
  const PreferenceStep at = kto_step_at(f.p, f.r, f.good, kl, {0.5, 1, 2});
  CHECK(at.loss == whole.loss);
  CHECK(at.row_coefficients == whole.row_coefficients);
  CHECK(at.metrics == whole.metrics);
  // Another point is another loss; a negative mean clamps to 0.
  CHECK(kto_step_at(f.p, f.r, f.good, 0.0, {0.5, 1, 2}).loss != whole.loss);
  CHECK(kto_reference_point(std::vector<double>{-9, -9}, std::vector<double>{-1, -1}) == 0.0);
  CHECK_THROWS_AS(kto_reference_point({}, {}), std::invalid_argument);
  CHECK_THROWS_AS(kto_step_at(f.p, f.r, std::vector<uint8_t>{1}, kl, {}), std::invalid_argument);
}

TEST_CASE("kto: each example's coefficient is the loss's finite difference, KL held", "[graph]") {
  const KtoOptions o{0.3, 1.5, 0.75};
  for (uint32_t seed : {1u, 2u}) {
    Feedback f = random_feedback(6, seed);
    // Seed 2 pushes the KL rows above their reference so the clamp is not what decides.
    if (seed == 2)
      for (auto& x : f.pkl) x += 10;
    const PreferenceStep s = kto(f, o);
    INFO("seed " << seed << " kl " << s.metric("kl"));
    for (std::size_t i = 0; i < 6; ++i) {
      Feedback up = f, down = f;
      up.p[i] += kStep;
      down.p[i] -= kStep;
      const double fd = (kto(up, o).loss - kto(down, o).loss) / (2 * kStep);
      INFO("example " << i);
      CHECK(std::abs(s.row_coefficients[i] - fd) < kDifferenceError);
      CHECK(std::abs(fd) > 1e-8);
    }
    // The KL rows move the loss (through the reference point) but carry no gradient: TRL
    // detaches the estimate.
    for (std::size_t i = 6; i < 12; ++i) CHECK(s.row_coefficients[i] == 0.0);
  }
  Feedback f = random_feedback(6, 2);
  for (auto& x : f.pkl) x += 10;
  Feedback moved = f;
  moved.pkl[0] += 1;
  CHECK(kto(moved, o).loss != kto(f, o).loss);
}

TEST_CASE("kto: metrics average each kind over its own examples", "[graph]") {
  Feedback f{{-2, -4, -6, -8}, {-3, -3, -3, -3}, {0, 0, 0, 0}, {1, 1, 1, 1}, {1, 0, 0, 1}};
  const PreferenceStep s = kto(f, {0.1, 1, 1});
  // Desirable 0 and 3: r = 1, −5; undesirable 1 and 2: r = −1, −3.
  CHECK(s.metric("rewards/chosen") == Approx(-0.2).epsilon(1e-14));
  CHECK(s.metric("rewards/rejected") == Approx(-0.2).epsilon(1e-14));
  CHECK(s.metric("rewards/margins") == Approx(0.0).margin(1e-15));
  CHECK(s.metric("logps/chosen") == Approx(-5.0).epsilon(1e-15));
  CHECK(s.metric("logps/rejected") == Approx(-5.0).epsilon(1e-15));
  CHECK_THROWS_WITH(s.metric("rewards/accuracies"), Catch::Contains("rewards/accuracies"));
}

TEST_CASE("kto: refuses empty or ragged batches and bad options", "[graph]") {
  const std::vector<double> one{-1}, two{-1, -2}, none;
  const std::vector<uint8_t> yes{1}, nothing;
  CHECK_THROWS_WITH(kto_step(none, none, nothing, none, none, {}), Catch::Contains("no examples"));
  CHECK_THROWS_WITH(kto_step(one, one, yes, two, one, {}), Catch::Contains("2 values"));
  CHECK_THROWS_WITH(kto_step(one, one, yes, one, one, {-1, 1, 1}), Catch::Contains("beta"));
  CHECK_THROWS_WITH(kto_step(one, one, yes, one, one, {0.1, -1, 1}), Catch::Contains("weights"));
}

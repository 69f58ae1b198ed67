// Per-row loss scales (TrainShape::row_loss_scales, Session::step_rows): the step split around
// the host into its forward pass and the rest. The mean loss run through it, every row given the
// same coefficient, is SFT's step bit for bit, whole or accumulated, under every checkpoint
// policy; a row given coefficient 0 trains exactly as if its targets were ignored; the row
// log-probs are minus the rows' summed losses.
#include <catch2/catch.hpp>

#include <cmath>

#include "base/ignore_target.h"
#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

SessionConfig config(int accum, const std::string& policy, bool row_scales) {
  SessionConfig c;
  c.model = ModelConfig{2, 48, 3, 101, 32};
  c.shape.batch = 4;
  c.shape.seq = 23;
  c.shape.row_loss_scales = row_scales;
  c.accum = accum;
  c.policy = Policy::parse(policy);
  c.optimizer.lr = 1e-2;
  c.seed = 78;
  return c;
}

struct Result {
  std::vector<float> losses;
  std::vector<std::pair<std::string, std::vector<float>>> params;
};

std::vector<uint32_t> targets_of(std::size_t n, uint32_t seed) {
  auto t = test::random_indices(n, seed, 101);
  for (std::size_t i = 0; i < n; i += 5) t[i] = kIgnoreTarget;  // a loss mask, as SFT rows have
  return t;
}

Result train(const SessionConfig& c) {
  Session s(test::device(), c);
  Result r;
  const size_t n = size_t(c.shape.batch) * c.shape.seq * c.accum;
  for (uint32_t step = 0; step < 3; ++step)
    r.losses.push_back(s.step(test::random_indices(n, 10 + step, 101), targets_of(n, 20 + step)));
  r.params = s.parameters();
  return r;
}

}  // namespace

TEST_CASE("row loss scales: the mean loss through per-row scales is SFT's step, bit for bit") {
  for (int accum : {1, 2})
    for (const char* policy : {"none", "every:1"}) {
      INFO("accum " << accum << ", policy " << policy);
      const Result sft = train(config(accum, policy, false));
      const Result rows = train(config(accum, policy, true));
      CHECK(rows.losses == sft.losses);
      CHECK(rows.params == sft.params);
      CHECK(std::isfinite(rows.losses.back()));
    }
}

TEST_CASE("row loss scales: a row of coefficient 0 trains as if its targets were ignored") {
  const SessionConfig c = config(1, "every:1", true);
  const size_t T = size_t(c.shape.seq), n = size_t(c.shape.batch) * T;
  const auto tokens = test::random_indices(n, 30, 101);
  const auto targets = targets_of(n, 31);
  // Rows 0 and 1 trained with the mean's coefficient over their targets; rows 2 and 3 not.
  auto ignored = targets;
  std::fill(ignored.begin() + std::ptrdiff_t(2 * T), ignored.end(), kIgnoreTarget);
  std::size_t trained = 0;
  for (uint32_t t : ignored) trained += t != kIgnoreTarget;
  Session sft(test::device(), config(1, "every:1", false));
  const float loss = sft.step(tokens, ignored);
  Session rows(test::device(), c);
  std::vector<double> seen;
  rows.step_rows(tokens, targets, [&](std::size_t, std::span<const double> lp) {
    seen.assign(lp.begin(), lp.end());
    const double c0 = -double(1.0f / float(trained));
    return std::vector<double>{c0, c0, 0.0, 0.0};
  });
  CHECK(rows.parameters() == sft.parameters());
  CHECK(rows.parameters() != Session(test::device(), c).parameters());
  // The row log-probs are minus the rows' summed losses: rows 0 and 1 give SFT's mean.
  REQUIRE(seen.size() == 4);
  CHECK(float(-(seen[0] + seen[1]) / double(trained)) == loss);
  for (double l : seen) CHECK(l < 0);
}

TEST_CASE("row loss scales: row log-probs without training are the training forward's") {
  const SessionConfig c = config(1, "none", true);
  const size_t n = size_t(c.shape.batch) * c.shape.seq;
  const auto tokens = test::random_indices(n, 40, 101);
  auto targets = targets_of(n, 41);
  std::fill(targets.begin(), targets.begin() + c.shape.seq, kIgnoreTarget);  // row 0: nothing
  Session s(test::device(), c);
  const auto before = s.parameters();
  const std::vector<double> lp = s.row_log_probs(tokens, targets);
  CHECK(s.parameters() == before);
  REQUIRE(lp.size() == 4);
  CHECK(lp[0] == 0.0);
  std::vector<double> stepped;
  s.step_rows(tokens, targets, [&](std::size_t, std::span<const double> l) {
    stepped.assign(l.begin(), l.end());
    return std::vector<double>(4, 0.0);
  });
  CHECK(stepped == lp);
  CHECK_THROWS_WITH(Session(test::device(), config(1, "none", false))
                        .step_rows(tokens, targets,
                                   [](std::size_t, std::span<const double>) {
                                     return std::vector<double>(4, 0.0);
                                   }),
                    Catch::Contains("per-row loss scales"));
}

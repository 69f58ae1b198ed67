// Gradient accumulation: accum micro-batches of B rows train like one batch of accum·B rows
// (up to float summation order), and stay bit-identical across checkpoint policies.
#include <catch2/catch.hpp>

#include <cmath>

#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

SessionConfig config(int batch, int accum, const std::string& policy) {
  SessionConfig c;
  c.model = ModelConfig{2, 48, 3, 101, 32};
  c.shape.batch = batch;
  c.shape.seq = 23;
  c.accum = accum;
  c.policy = Policy::parse(policy);
  c.optimizer.lr = 1e-2;
  // eps 1 makes AdamW's update nearly linear in the gradient (|g| << 1), so comparing updates
  // compares gradients; with eps 1e-8 the first updates are lr·sign(g), and the sign of a
  // gradient that is zero up to rounding would decide them.
  c.optimizer.eps = 1.0;
  c.seed = 77;
  return c;
}

struct Result {
  std::vector<float> losses;
  std::vector<std::pair<std::string, std::vector<float>>> params;
};

Result train(const SessionConfig& c) {
  Session s(test::device(), c);
  Result r;
  const size_t n = size_t(c.shape.batch) * c.shape.seq * c.accum;
  for (uint32_t step = 0; step < 3; ++step)
    r.losses.push_back(
        s.step(test::random_indices(n, 10 + step, 101), test::random_indices(n, 20 + step, 101)));
  r.params = s.parameters();
  return r;
}

}  // namespace

TEST_CASE("two micro-batches of 3 rows train like one batch of 6 rows") {
  const Result whole = train(config(6, 1, "none"));
  const Result split = train(config(3, 2, "none"));
  const Result initial = [] {
    Session s(test::device(), config(6, 1, "none"));
    return Result{{}, s.parameters()};
  }();
  for (size_t i = 0; i < whole.losses.size(); ++i)
    CHECK(split.losses[i] == Approx(whole.losses[i]).epsilon(1e-5));
  // Compare the updates (w - w0) relative to the largest update of each tensor: float sums in
  // another order differ by rounding only (fp32: ~1e-7 per op, accumulated over ~100 terms).
  double worst = 0;
  for (size_t p = 0; p < whole.params.size(); ++p) {
    double largest = 0;
    for (size_t i = 0; i < whole.params[p].second.size(); ++i)
      largest = std::max(largest,
                         std::abs(double(whole.params[p].second[i]) - initial.params[p].second[i]));
    for (size_t i = 0; i < whole.params[p].second.size(); ++i) {
      const double w0 = initial.params[p].second[i];
      const double a = whole.params[p].second[i] - w0, b = split.params[p].second[i] - w0;
      worst = std::max(worst, std::abs(a - b) / largest);
    }
  }
  INFO("worst difference of updates, relative to the tensor's largest update: " << worst);
  CHECK(worst < 1e-3);
  CHECK(split.params != initial.params);
}

TEST_CASE("with accumulation, weights are byte-identical across policies") {
  const Result none = train(config(3, 2, "none"));
  const Result every = train(config(3, 2, "every:1"));
  CHECK(none.losses == every.losses);
  CHECK(none.params == every.params);
}

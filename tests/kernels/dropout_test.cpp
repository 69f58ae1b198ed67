// Dropout: the host Philox against Random123's known answers; the reference backward against
// finite differences; the GPU mask equal to the host's bit for bit, reused by the backward,
// changing with seed, step and op id, and dropping a fraction p; accumulation; bit-identity.
#include <catch2/catch.hpp>

#include <cmath>

#include "runtime/kernels/dropout.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/dropout.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

TEST_CASE("host Philox4x32-10 matches the Random123 known-answer vectors") {
  // Random123 tests/kat_vectors, the three "philox4x32 10" lines: counter, key, result.
  using W4 = std::array<uint32_t, 4>;
  CHECK(ref::philox4x32_10({0, 0, 0, 0}, {0, 0}) ==
        W4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(ref::philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                           {0xffffffff, 0xffffffff}) ==
        W4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(ref::philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                           {0xa4093822, 0x299f31d0}) ==
        W4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("dropout reference backward matches finite differences") {
  ref::DropoutConfig cfg{0.3f, 0x123456789abcdefull, 5, 2};
  auto x = test::random_doubles(40, 81), weights = test::random_doubles(40, 82);
  std::vector<double> y;
  auto loss = [&] {
    ref::dropout_forward(y, x, cfg);
    return test::weighted_sum(y, weights);
  };
  std::vector<double> dx(40);
  ref::dropout_backward(dx, weights, cfg, false);
  test::require_matches_finite_differences(loss, x, dx, "dx");
}

struct DropRun {
  std::vector<float> y, dx;
};

DropRun run_gpu(const ref::DropoutConfig& cfg, const std::vector<float>& x,
                const std::vector<float>& dy, const std::vector<float>& dx0) {
  const auto n = uint32_t(x.size());
  const bool acc = !dx0.empty();
  Buffer bx = test::upload_buffer(x, "x"), bdy = test::upload_buffer(dy, "dy");
  Buffer by = test::garbage_buffer<float>(n, "y");
  Buffer bdx = acc ? test::upload_buffer(dx0, "dx") : test::garbage_buffer<float>(n, "dx");
  kernels::DropoutKey key{cfg.seed, cfg.step, cfg.op_id};
  test::run_once({kernels::dropout_forward(n, cfg.p, key, bx.whole(), by.whole()),
                  kernels::dropout_backward(n, cfg.p, key, bdy.whole(), bdx.whole(), acc)});
  return {test::read<float>(by, n), test::read<float>(bdx, n)};
}

// Inputs without zeros, so y == 0 exactly where the mask drops.
std::vector<float> nonzero(std::size_t n, uint64_t seed) {
  auto v = test::random_floats(n, seed, 0.5f, 1.5f);
  for (std::size_t i = 0; i < n; i += 2) v[i] = -v[i];
  return v;
}

std::vector<bool> mask_of(const std::vector<float>& y) {
  std::vector<bool> m(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) m[i] = y[i] != 0.0f;
  return m;
}

const ref::DropoutConfig kCfg{0.1f, 0xfeedface12345678ull, 7, 3};

TEST_CASE("dropout GPU mask and values equal the host reference bit for bit") {
  for (std::size_t n :
       {std::size_t(3 * 23 * 48 + 3), std::size_t(1), std::size_t(6), std::size_t(4 * 64 * 768)}) {
    DYNAMIC_SECTION("n = " << n) {
      auto x = nonzero(n, 83), dy = nonzero(n, 84);
      auto g = run_gpu(kCfg, x, dy, {});
      std::vector<float> y, dx(n);
      ref::dropout_forward(y, x, kCfg);
      ref::dropout_backward(dx, dy, kCfg, false);
      REQUIRE(test::bit_identical(g.y, y));
      REQUIRE(test::bit_identical(g.dx, dx));
      // The backward used the forward's mask.
      REQUIRE(mask_of(g.y) == mask_of(g.dx));
    }
  }
}

TEST_CASE("dropout drops a fraction p and the mask changes with seed, step and op id") {
  const std::size_t n = 4 * 64 * 768;
  auto x = nonzero(n, 85);
  auto base = mask_of(run_gpu(kCfg, x, x, {}).y);
  std::size_t dropped = 0;
  for (bool keep : base) dropped += !keep;
  // Binomial(n, 0.1): standard deviation 6.8e-4 of n, so +-0.003 is over 4 sigma.
  CHECK(std::abs(double(dropped) / n - 0.1) < 0.003);

  auto variant = kCfg;
  for (int which = 0; which < 3; ++which) {
    variant = kCfg;
    if (which == 0) variant.seed ^= 1ull << 40;  // the seed's high word matters too
    if (which == 1) variant.step += 1;
    if (which == 2) variant.op_id += 1;
    auto other = mask_of(run_gpu(variant, x, x, {}).y);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < n; ++i) differ += base[i] != other[i];
    // Independent masks differ in 2 p (1 - p) = 18% of elements.
    INFO("variant " << which << ": " << differ << " of " << n << " differ");
    CHECK(std::abs(double(differ) / n - 0.18) < 0.005);
  }
}

TEST_CASE("dropout backward accumulates onto existing gradients exactly") {
  const std::size_t n = 3 * 23 * 48;
  auto x = nonzero(n, 86), dy = nonzero(n, 87), dx0 = test::random_floats(n, 88);
  auto g = run_gpu(kCfg, x, dy, dx0);
  std::vector<float> dx = dx0;
  ref::dropout_backward(dx, dy, kCfg, true);
  REQUIRE(test::bit_identical(g.dx, dx));
}

TEST_CASE("dropout GPU runs are bit-identical") {
  auto x = nonzero(5001, 89);
  auto a = run_gpu(kCfg, x, x, {}), b = run_gpu(kCfg, x, x, {});
  REQUIRE(test::bit_identical(a.y, b.y));
  REQUIRE(test::bit_identical(a.dx, b.dx));
}

}  // namespace

TEST_CASE("dropout reads the training step from a buffer the host rewrites between replays") {
  const uint32_t n = 3 * 23 * 48;
  auto x = nonzero(n, 91), dy = nonzero(n, 92);
  std::vector<uint32_t> steps = {0, 0, 0};
  Buffer bsteps = test::upload_buffer(steps, "steps");
  Buffer bx = test::upload_buffer(x, "x"), bdy = test::upload_buffer(dy, "dy");
  Buffer by = test::garbage_buffer<float>(n, "y"), bdx = test::garbage_buffer<float>(n, "dx");
  kernels::DropoutKey key{kCfg.seed, 0, kCfg.op_id, bsteps.whole(), 2};
  Executor ex(test::kernels(), {kernels::dropout_forward(n, kCfg.p, key, bx.whole(), by.whole()),
                                kernels::dropout_backward(n, kCfg.p, key, bdy.whole(), bdx.whole(), false)});
  for (uint32_t step : {7u, 8u}) {
    steps[2] = step;
    upload(test::device(), bsteps, 0, steps.data(), steps.size() * 4);
    ex.run();
    ref::DropoutConfig cfg = kCfg;
    cfg.step = step;
    const DropRun expect = run_gpu(cfg, x, dy, {});
    CHECK(test::read<float>(by, n) == expect.y);
    CHECK(test::read<float>(bdx, n) == expect.dx);
  }
}

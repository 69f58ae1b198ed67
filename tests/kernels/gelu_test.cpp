// GELU (tanh approximation) forward and backward: the reference backward against finite
// differences, the GPU kernels against the reference (tails included), accumulation, and
// bit-identity.
#include <catch2/catch.hpp>

#include "runtime/kernels/gelu.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/gelu.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

TEST_CASE("gelu reference backward matches finite differences") {
  auto x = test::random_doubles(64, 31, -5, 5);
  auto weights = test::random_doubles(64, 32);
  std::vector<double> y;
  auto loss = [&] {
    ref::gelu_forward(y, x);
    return test::weighted_sum(y, weights);
  };
  std::vector<double> dx(x.size());
  ref::gelu_backward(dx, weights, x, false);
  test::require_matches_finite_differences(loss, x, dx, "dx");
}

// Pre-activations of GPT-2's MLP, plus the tails where exp over- and underflows.
std::vector<float> gelu_inputs(std::size_t n) {
  auto x = test::random_floats(n, 33 + n, -6, 6);
  const float tails[] = {0.0f,   -0.0f, 1e-30f, -1e-30f, 12.0f,
                         -12.0f, 30.0f, -30.0f, 100.0f,  -100.0f};
  for (std::size_t i = 0; i < std::size(tails) && i < n; ++i)
    x[i * (n / std::size(tails))] = tails[i];
  return x;
}

struct GeluRun {
  std::vector<float> y, dx;
};

// The device's own variant unless told: storage buffers, or texel views on CPU drivers.
DeviceQuirks with_texels(bool on) {
  DeviceQuirks q = test::device().plan().quirks;
  q.texel_fetch_beats_storage_loads = on;
  return q;
}

GeluRun run_gpu(const std::vector<float>& x, const std::vector<float>& dy,
                const std::vector<float>& dx0,
                const DeviceQuirks& q = test::device().plan().quirks) {
  const auto n = uint32_t(x.size());
  const bool acc = !dx0.empty();
  Buffer bx = test::upload_buffer(x, "x"), bdy = test::upload_buffer(dy, "dy");
  Buffer by = test::garbage_buffer<float>(n, "y");
  Buffer bdx = acc ? test::upload_buffer(dx0, "dx") : test::garbage_buffer<float>(n, "dx");
  test::run_once({kernels::gelu_forward(q, n, bx.whole(), by.whole()),
                  kernels::gelu_backward(q, n, bdy.whole(), bx.whole(), bdx.whole(), acc)});
  return {test::read<float>(by, n), test::read<float>(bdx, n)};
}

TEST_CASE("gelu GPU forward and backward match the reference") {
  // B=3, T=23, 4C=192; tiny; and GPT-2 small's MLP at B=4, T=64.
  for (std::size_t n :
       {std::size_t(3 * 23 * 192), std::size_t(1), std::size_t(13), std::size_t(4 * 64 * 3072)}) {
    DYNAMIC_SECTION("n = " << n) {
      auto x = gelu_inputs(n);
      auto dy = test::random_floats(n, 34);
      auto g = run_gpu(x, dy, {});
      std::vector<double> y, dx(n);
      ref::gelu_forward(y, test::to_double(x));
      ref::gelu_backward(dx, test::to_double(dy), test::to_double(x), false);
      // Elementwise: 1e-5 relative. The absolute floors are far below the O(1) values: 1e-7 for
      // y (|y| < 1e-7 only in the far negative tail) and 1e-6 for dx, because gelu' crosses
      // zero near x = -0.75 where its two O(0.3) terms cancel.
      test::require_close(g.y, y, 1e-5, 1e-7, "y");
      test::require_close(g.dx, dx, 1e-5, 1e-6, "dx");
    }
  }
}

TEST_CASE("gelu backward accumulates onto existing gradients exactly") {
  const std::size_t n = 3 * 23 * 192;
  auto x = gelu_inputs(n);
  auto dy = test::random_floats(n, 35);
  auto dx0 = test::random_floats(n, 36);
  auto acc = run_gpu(x, dy, dx0);
  auto fresh = run_gpu(x, dy, {});
  std::vector<double> dx = test::to_double(dx0);
  ref::gelu_backward(dx, test::to_double(dy), test::to_double(x), true);
  test::require_close(acc.dx, dx, 1e-5, 1e-6, "dx accumulated");
  for (std::size_t i = 0; i < n; ++i) {
    INFO("element " << i);
    REQUIRE(acc.dx[i] == dx0[i] + fresh.dx[i]);
  }
}

TEST_CASE("gelu storage-buffer and texel-view kernels give the same bits") {
  // 4C = 3072 at B=2, T=3, and 192 more: whole vec4s, so the texel kernels run on CPU drivers.
  const std::size_t n = 2 * 3 * 3072 + 192;
  auto x = gelu_inputs(n);
  auto dy = test::random_floats(n, 38);
  auto dx0 = test::random_floats(n, 39);
  for (bool acc : {false, true}) {
    DYNAMIC_SECTION((acc ? "accumulate" : "overwrite")) {
      auto s = run_gpu(x, dy, acc ? dx0 : std::vector<float>{}, with_texels(false));
      auto t = run_gpu(x, dy, acc ? dx0 : std::vector<float>{}, with_texels(true));
      REQUIRE(test::bit_identical(s.y, t.y));
      REQUIRE(test::bit_identical(s.dx, t.dx));
    }
  }
}

TEST_CASE("gelu GPU runs are bit-identical") {
  auto x = gelu_inputs(5000);
  auto dy = test::random_floats(5000, 37);
  auto a = run_gpu(x, dy, {}), b = run_gpu(x, dy, {});
  REQUIRE(test::bit_identical(a.y, b.y));
  REQUIRE(test::bit_identical(a.dx, b.dx));
}

}  // namespace

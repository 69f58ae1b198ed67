// Per-head L2 normalisation (Gated DeltaNet's q and k): the reference backward against finite
// differences, the GPU kernels against the reference dense and read in place from the conv's
// wider output, a zero head, accumulation (and nothing outside the heads written), bit-identity.
#include <catch2/catch.hpp>

#include <cmath>

#include "runtime/kernels/l2norm.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/l2norm.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// transformers' l2norm eps (qwen3_next and qwen3_5: l2norm(x, dim=-1, eps=1e-6)).
constexpr double kEps = 1e-6;

std::size_t x_floats(const ref::L2normLayout& l) {
  return (l.tokens - 1) * l.stride + l.offset + l.heads * l.D;
}

// q's 3 heads of 5 at offset 2 of rows of 40 (k and v beside it), scaled as q is; and a dense k.
TEST_CASE("l2norm reference backward matches finite differences") {
  const auto l = GENERATE(ref::L2normLayout{4, 3, 5, 40, 2, kEps, 1 / std::sqrt(5.0)},
                          ref::L2normLayout{3, 2, 6, 12, 0, kEps, 1.0});
  auto x = test::random_doubles(x_floats(l), 91, -2, 2);
  auto weights = test::random_doubles(l.tokens * l.heads * l.D, 92);
  std::vector<double> y;
  auto loss = [&] {
    ref::l2norm_forward(y, x, l);
    return test::weighted_sum(y, weights);
  };
  std::vector<double> dx(x.size(), 0.0);
  ref::l2norm_backward(dx, weights, x, l, false);
  test::require_matches_finite_differences(loss, x, dx, "dx");
}

struct L2Inputs {
  ref::L2normLayout l;
  std::vector<float> x, dy;
  std::vector<float> dx0;  // dx's prior contents: a pattern outside the heads, or added to
  bool accumulate = false;
};

struct L2Run {
  std::vector<float> y, dx;
};

L2Inputs make_inputs(const ref::L2normLayout& l, bool accumulate = false) {
  L2Inputs in{l, test::random_floats(x_floats(l), 93 + l.D, -3, 3),
              test::random_floats(l.tokens * l.heads * l.D, 94),
              test::random_floats(x_floats(l), 95), accumulate};
  for (std::size_t d = 0; d < l.D; ++d) in.x[l.offset + d] = 0.0f;  // token 0's head 0 is zero
  return in;
}

L2Run run_gpu(const L2Inputs& in) {
  const auto& l = in.l;
  const std::size_t ny = l.tokens * l.heads * l.D;
  Buffer x = test::upload_buffer(in.x, "x"), dy = test::upload_buffer(in.dy, "dy"),
         y = test::garbage_buffer<float>(ny, "y"), dx = test::upload_buffer(in.dx0, "dx");
  const kernels::L2normShape s{uint32_t(l.tokens), uint32_t(l.heads),  uint32_t(l.D),
                               uint32_t(l.stride), uint32_t(l.offset), float(l.eps),
                               float(l.scale)};
  const auto mode = in.accumulate ? kernels::GradWrite::accumulate : kernels::GradWrite::overwrite;
  test::run_once({kernels::l2norm_forward(s, x.whole(), y.whole()),
                  kernels::l2norm_backward(s, dy.whole(), x.whole(), dx.whole(), mode)});
  return {test::read<float>(y, ny), test::read<float>(dx, in.x.size())};
}

// Sums of D fp32 terms: 1e-5 relative with a 1e-6 floor (outputs are O(1); the zero head's dx is
// dy * scale / sqrt(eps), O(1e3), and relative). Outside the heads dx keeps its old bits.
void check_against_reference(const L2Inputs& in, const L2Run& g) {
  using test::to_double;
  std::vector<double> y;
  ref::l2norm_forward(y, to_double(in.x), in.l);
  std::vector<double> dx = to_double(in.dx0);
  ref::l2norm_backward(dx, to_double(in.dy), to_double(in.x), in.l, in.accumulate);
  test::require_close(g.y, y, 1e-5, 1e-6, "y");
  test::require_close(g.dx, dx, 1e-5, 1e-6, "dx");
  std::vector<bool> head(in.x.size(), false);
  for (std::size_t t = 0; t < in.l.tokens; ++t)
    for (std::size_t i = 0; i < in.l.heads * in.l.D; ++i)
      head[t * in.l.stride + in.l.offset + i] = true;
  for (std::size_t i = 0; i < head.size(); ++i)
    if (!head[i]) {
      INFO("dx element " << i << " lies outside the heads");
      REQUIRE(test::bit_identical(std::vector<float>{g.dx[i]}, std::vector<float>{in.dx0[i]}));
    }
}

TEST_CASE("l2norm GPU forward and backward match the reference") {
  const double q_scale = 1 / std::sqrt(128.0);
  // Dense heads; one float; Qwen3.5-0.8B's q (offset 0, scaled) and k (offset key_dim 2048) read
  // in place from conv rows of 2·2048 + 2048 floats; odd sizes at an odd offset.
  for (const ref::L2normLayout& l :
       {ref::L2normLayout{37, 3, 16, 48, 0, kEps, 1.0}, ref::L2normLayout{1, 1, 1, 1, 0, kEps, 1.0},
        ref::L2normLayout{8, 16, 128, 6144, 0, kEps, q_scale},
        ref::L2normLayout{8, 16, 128, 6144, 2048, kEps, 1.0},
        ref::L2normLayout{5, 3, 7, 50, 3, kEps, 0.5}}) {
    for (bool acc : {false, true}) {
      DYNAMIC_SECTION("tokens " << l.tokens << " heads " << l.heads << " D " << l.D << " stride "
                                << l.stride << " offset " << l.offset << " accumulate " << acc) {
        auto in = make_inputs(l, acc);
        check_against_reference(in, run_gpu(in));
      }
    }
  }
}

TEST_CASE("l2norm backward accumulates exactly onto existing gradients") {
  const ref::L2normLayout l{9, 4, 32, 300, 10, kEps, 0.25};
  auto in = make_inputs(l, true);
  const L2Run g = run_gpu(in);
  auto fresh = in;
  fresh.accumulate = false;
  const L2Run o = run_gpu(fresh);
  for (std::size_t t = 0; t < l.tokens; ++t)
    for (std::size_t i = 0; i < l.heads * l.D; ++i) {
      const std::size_t k = t * l.stride + l.offset + i;
      INFO("dx element " << k);
      REQUIRE(g.dx[k] == in.dx0[k] + o.dx[k]);
    }
}

TEST_CASE("l2norm GPU runs are bit-identical") {
  auto in = make_inputs({23, 6, 40, 500, 7, kEps, 0.3}, true);
  const L2Run a = run_gpu(in), b = run_gpu(in);
  REQUIRE(test::bit_identical(a.y, b.y));
  REQUIRE(test::bit_identical(a.dx, b.dx));
}

}  // namespace

// Gated RMSNorm (Gated DeltaNet's output norm): the reference backward against finite
// differences, the GPU kernels against the reference, accumulation, and bit-identity.
#include <catch2/catch.hpp>

#include "runtime/kernels/gated_rmsnorm.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/gated_rmsnorm.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

constexpr float kEps = 1e-6f;  // Qwen3.5's rms_norm_eps

TEST_CASE("gated_rmsnorm reference backward matches finite differences") {
  const std::size_t rows = 6, D = 7;
  auto o = test::random_doubles(rows * D, 131, -2, 2);
  auto z = test::random_doubles(rows * D, 132, -4, 4);
  auto w = test::random_doubles(D, 133, 0.5, 1.5);
  auto weights = test::random_doubles(rows * D, 134);
  std::vector<double> y, rstd;
  auto loss = [&] {
    ref::gated_rmsnorm_forward(y, rstd, o, z, w, rows, D, double(kEps));
    return test::weighted_sum(y, weights);
  };
  loss();
  std::vector<double> d_o(o.size()), dz(z.size()), dw(D);
  ref::gated_rmsnorm_backward(d_o, dz, dw, weights, o, z, w, rstd, rows, D, false);
  test::require_matches_finite_differences(loss, o, d_o, "do");
  test::require_matches_finite_differences(loss, z, dz, "dz");
  test::require_matches_finite_differences(loss, w, dw, "dw");
}

struct NormInputs {
  std::size_t rows, D;
  std::vector<float> o, z, w, dy;
  std::vector<float> do0, dz0, dw0;  // prior gradients (empty: overwrite)
};

struct NormRun {
  std::vector<float> y, rstd, d_o, dz, dw;
};

NormInputs make_inputs(std::size_t rows, std::size_t D, bool accumulate = false) {
  NormInputs in{rows,
                D,
                test::random_floats(rows * D, 141 + D, -3, 3),
                test::random_floats(rows * D, 142, -8, 8),
                test::random_floats(D, 143, 0.5f, 1.5f),
                test::random_floats(rows * D, 144)};
  for (std::size_t r = 0; r < rows; ++r)  // a scale per row, so rstd differs between rows
    for (std::size_t d = 0; d < D; ++d) in.o[r * D + d] *= 0.25f + float(r % 5);
  if (accumulate) {
    in.do0 = test::random_floats(rows * D, 145), in.dz0 = test::random_floats(rows * D, 146);
    in.dw0 = test::random_floats(D, 147);
  }
  return in;
}

NormRun run_gpu(const NormInputs& in) {
  const std::size_t n = in.rows * in.D;
  const bool acc = !in.do0.empty();
  auto grad = [&](const std::vector<float>& v, std::size_t count, const char* name) {
    return acc ? test::upload_buffer(v, name) : test::garbage_buffer<float>(count, name);
  };
  Buffer o = test::upload_buffer(in.o, "o"), z = test::upload_buffer(in.z, "z"),
         w = test::upload_buffer(in.w, "w"), dy = test::upload_buffer(in.dy, "dy"),
         y = test::garbage_buffer<float>(n, "y"), rstd = test::garbage_buffer<float>(in.rows, "r");
  Buffer d_o = grad(in.do0, n, "do"), dz = grad(in.dz0, n, "dz"), dw = grad(in.dw0, in.D, "dw");
  const kernels::GatedRmsnormShape s{uint32_t(in.rows), uint32_t(in.D), kEps};
  const auto m = acc ? kernels::GradWrite::accumulate : kernels::GradWrite::overwrite;
  test::run_once(
      {kernels::gated_rmsnorm_forward(s, o.whole(), z.whole(), w.whole(), y.whole(), rstd.whole()),
       kernels::gated_rmsnorm_backward(s, dy.whole(), o.whole(), z.whole(), w.whole(), rstd.whole(),
                                       d_o.whole(), dz.whole(), m, m),
       kernels::gated_rmsnorm_backward_weight(s, dy.whole(), o.whole(), z.whole(), rstd.whole(),
                                              dw.whole(), m)});
  return {test::read<float>(y, n), test::read<float>(rstd, in.rows), test::read<float>(d_o, n),
          test::read<float>(dz, n), test::read<float>(dw, in.D)};
}

// Sums over D (forward, do) and over rows (dw) in fp32: 1e-4 relative with a 1e-5 floor, as
// RMSNorm's; dw's floor grows with the rows it sums.
void check_against_reference(const NormInputs& in, const NormRun& g) {
  using test::to_double;
  const bool acc = !in.do0.empty();
  const std::size_t n = in.rows * in.D;
  std::vector<double> y, rstd;
  ref::gated_rmsnorm_forward(y, rstd, to_double(in.o), to_double(in.z), to_double(in.w), in.rows,
                             in.D, double(kEps));
  std::vector<double> d_o = acc ? to_double(in.do0) : std::vector<double>(n),
                      dz = acc ? to_double(in.dz0) : std::vector<double>(n),
                      dw = acc ? to_double(in.dw0) : std::vector<double>(in.D);
  ref::gated_rmsnorm_backward(d_o, dz, dw, to_double(in.dy), to_double(in.o), to_double(in.z),
                              to_double(in.w), rstd, in.rows, in.D, acc);
  const double rtol = 1e-4, atol = 1e-5;
  test::require_close(g.y, y, rtol, atol, "y");
  test::require_close(g.rstd, rstd, rtol, atol, "rstd");
  test::require_close(g.d_o, d_o, rtol, atol, "do");
  test::require_close(g.dz, dz, rtol, atol, "dz");
  test::require_close(g.dw, dw, rtol, atol * double(in.rows), "dw");
}

TEST_CASE("gated_rmsnorm GPU forward and backward match the reference") {
  // Odd sizes; one float; Qwen3.5-0.8B's 16 value heads of 128 over B2 T8; more rows than
  // llvmpipe's 65535 loop iterations would allow one invocation to walk.
  for (auto [rows, D] :
       {std::pair<std::size_t, std::size_t>{3 * 23, 48}, {1, 1}, {2 * 8 * 16, 128}, {70000, 4}}) {
    for (bool acc : {false, true}) {
      DYNAMIC_SECTION("rows " << rows << " D " << D << " accumulate " << acc) {
        auto in = make_inputs(rows, D, acc);
        check_against_reference(in, run_gpu(in));
      }
    }
  }
}

TEST_CASE("gated_rmsnorm backward accumulates onto existing gradients") {
  auto in = make_inputs(37, 24, true);
  const NormRun g = run_gpu(in);
  auto fresh = in;
  fresh.do0.clear(), fresh.dz0.clear(), fresh.dw0.clear();
  const NormRun o = run_gpu(fresh);
  for (std::size_t i = 0; i < g.d_o.size(); ++i) {
    INFO("element " << i);
    REQUIRE(g.d_o[i] == in.do0[i] + o.d_o[i]);
    REQUIRE(g.dz[i] == in.dz0[i] + o.dz[i]);
  }
  for (std::size_t d = 0; d < in.D; ++d) {
    INFO("dw element " << d);
    REQUIRE(g.dw[d] == in.dw0[d] + o.dw[d]);
  }
}

TEST_CASE("gated_rmsnorm GPU runs are bit-identical") {
  auto in = make_inputs(2 * 8 * 16, 128, true);
  const NormRun a = run_gpu(in), b = run_gpu(in);
  REQUIRE(test::bit_identical(a.y, b.y));
  REQUIRE(test::bit_identical(a.rstd, b.rstd));
  REQUIRE(test::bit_identical(a.d_o, b.d_o));
  REQUIRE(test::bit_identical(a.dz, b.dz));
  REQUIRE(test::bit_identical(a.dw, b.dw));
}

}  // namespace

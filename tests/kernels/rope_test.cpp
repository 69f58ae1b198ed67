// Rotary position embedding forward and backward: the convention on a hand-worked case, the
// reference backward against finite differences, the GPU kernels against the reference on q and
// k inside a fused grouped-query qkv row and at a long Llama 3 context (with and without Llama 3's
// frequency scaling, whose angles are checked against transformers' rule), accumulation, untouched
// columns, bit-identity and the shape checks.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include "runtime/kernels/rope.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/rope.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

TEST_CASE("rope reference pairs i with i + D/2 at angle t * theta^(-2i/D)") {
  // D = 4, theta = 100: inv_freq = {1, 0.1}. At t = 0 nothing turns; at t = 2, pair (0, 2) turns
  // by 2 radians and pair (1, 3) by 0.2.
  const ref::RopeDims d{1, 3, 1, 4, 100.0f};
  std::vector<double> x(3 * 4, 0.0), y;
  for (std::size_t t = 0; t < 3; ++t) x[t * 4 + 0] = 1.0, x[t * 4 + 1] = 1.0;
  ref::rope_forward(y, x, d);
  CHECK(y[0] == 1.0);
  CHECK(y[1] == 1.0);
  CHECK(y[2] == 0.0);
  CHECK(y[3] == 0.0);
  CHECK(y[8] == Approx(std::cos(2.0)).epsilon(1e-6));
  CHECK(y[9] == Approx(std::cos(0.2)).epsilon(1e-6));
  CHECK(y[10] == Approx(std::sin(2.0)).epsilon(1e-6));
  CHECK(y[11] == Approx(std::sin(0.2)).epsilon(1e-6));
}

// The float angle the kernels and reference share is t * theta^(-2i/D) up to float rounding: the
// exponent x = (2i/D) log2(theta) carries four roundings (relative 2^-24 each), which 2^x turns
// into a relative error of 4 ln(2) |x| 2^-24 (as in any float pow, Hugging Face's included),
// and the polynomial, ldexp and the product with t a few ulps more.
TEST_CASE("rope angles are t * theta^(-2i/D) to a few float ulps") {
  for (float theta : {10000.0f, 500000.0f}) {
    const ref::RopeDims d{1, 1, 1, 128, theta};
    for (std::size_t t : {std::size_t(1), std::size_t(7), std::size_t(4095)})
      for (std::size_t i = 0; i < 64; ++i) {
        const double x = 2.0 * double(i) / 128.0 * std::log2(double(theta));
        const double exact = double(t) * std::exp2(-x);
        INFO("theta " << theta << " t " << t << " i " << i);
        CHECK(std::abs(ref::rope_angle(d, t, i) - exact) <=
              (4 + 4 * std::log(2.0) * x) * exact * 0x1p-24);
      }
  }
}

// With Llama 3's scaling the kernels' frequency is the graph/rope_scaling.h form of
// transformers' rule: inv_freq · scale, scale = 1/factor + s (1 − 1/factor), s = clamp(inv_freq ·
// slope − offset, 0, 1), each step rounded once. Next to the plain angle's error it adds s's
// rounding, at most (inv_freq · slope + offset) 2^-24 per operation times (1 − 1/factor), relative
// to a scale that may be as small as 1/factor; and the three constants' and products' roundings.
TEST_CASE("rope angles with llama3 scaling follow transformers' rule to a few float ulps") {
  const Llama3Scaling llama32{32.0f, 1.0f, 4.0f, 8192};  // Llama 3.2
  const Llama3Scaling small{8.0f, 1.0f, 4.0f, 100};      // the band in reach of D = 8 heads
  for (const auto& [theta, D, scaling] : {std::tuple{500000.0f, std::size_t(64), llama32},
                                          std::tuple{500000.0f, std::size_t(128), llama32},
                                          std::tuple{10000.0f, std::size_t(8), small},
                                          std::tuple{10000.0f, std::size_t(16), small}}) {
    const ref::RopeDims d{1, 1, 1, D, theta, scaling};
    const RopeScaleTerms k = rope_scale_terms(scaling);
    int blended = 0;
    for (std::size_t t : {std::size_t(1), std::size_t(23), std::size_t(4095)})
      for (std::size_t i = 0; i < D / 2; ++i) {
        const double x = 2.0 * double(i) / double(D) * std::log2(double(theta));
        const double plain = std::exp2(-x);
        const double exact = double(t) * llama3_scaled_inv_freq(plain, scaling);
        const double scale = exact / (double(t) * plain);
        const double s_error = 3 * (plain * k.slope + k.offset) * 0x1p-24;
        const double tol = (6 + 4 * std::log(2.0) * x) * 0x1p-24 + s_error / scale;
        if (scale > 1.0 / scaling.factor && scale < 1.0) blended += t == 1;
        INFO("theta " << theta << " D " << D << " t " << t << " i " << i << " scale " << scale);
        CHECK(std::abs(ref::rope_angle(d, t, i) - exact) <= tol * exact);
      }
    CHECK(blended > 0);  // every case has frequencies in the blended band
  }
}

TEST_CASE("rope reference backward matches finite differences") {
  const ref::RopeDims d{2, 5, 3, 6, 10000.0f};
  const std::size_t n = d.B * d.T * d.H * d.D;
  auto x = test::random_doubles(n, 61, -2, 2);
  auto weights = test::random_doubles(n, 62);
  std::vector<double> y;
  auto loss = [&] {
    ref::rope_forward(y, x, d);
    return test::weighted_sum(y, weights);
  };
  std::vector<double> dx(n);
  ref::rope_backward(dx, weights, d, false);
  test::require_matches_finite_differences(loss, x, dx, "dx");
}

// q and k of a grouped-query attention layer inside one fused row per position, as a fused
// projection would write them: [q (H heads) | k (KV heads) | v (KV heads)], D floats per head.
struct Qkv {
  std::size_t B, T, H, KV, D;
  float theta;
  Llama3Scaling llama3 = {};
  std::size_t row() const { return (H + 2 * KV) * D; }
  std::size_t k_offset() const { return H * D; }
  ref::RopeDims dims(std::size_t heads) const { return {B, T, heads, D, theta, llama3}; }
};

// Columns [offset, offset + heads * D) of every row of a fused buffer, as a compact tensor.
std::vector<float> columns(const std::vector<float>& fused, const Qkv& s, std::size_t offset,
                           std::size_t heads) {
  std::vector<float> out;
  for (std::size_t r = 0; r < s.B * s.T; ++r)
    for (std::size_t c = 0; c < heads * s.D; ++c) out.push_back(fused[r * s.row() + offset + c]);
  return out;
}

struct RopeRun {
  std::vector<float> q, k;  // forward outputs, compact
  std::vector<float> dqkv;  // backward output, fused
};

// Forward from a fused qkv into compact q and k; backward from compact dq and dk into a fused
// dqkv (prefilled with dqkv0, or NaN garbage when dqkv0 is empty and the mode overwrites).
RopeRun run_gpu(const Qkv& s, const std::vector<float>& qkv, const std::vector<float>& dq,
                const std::vector<float>& dk, const std::vector<float>& dqkv0) {
  const bool acc = !dqkv0.empty();
  const std::size_t rows = s.B * s.T;
  const auto mode = acc ? kernels::GradWrite::accumulate : kernels::GradWrite::overwrite;
  Buffer bqkv = test::upload_buffer(qkv, "qkv"), bdq = test::upload_buffer(dq, "dq"),
         bdk = test::upload_buffer(dk, "dk");
  Buffer bq = test::garbage_buffer<float>(rows * s.H * s.D, "q"),
         bk = test::garbage_buffer<float>(rows * s.KV * s.D, "k");
  Buffer bdqkv = acc ? test::upload_buffer(dqkv0, "dqkv")
                     : test::garbage_buffer<float>(rows * s.row(), "dqkv");
  const auto row = uint32_t(s.row()), k_off = uint32_t(s.k_offset());
  const kernels::RopeShape qs{uint32_t(s.B), uint32_t(s.T), uint32_t(s.H),
                              uint32_t(s.D), s.theta,       s.llama3};
  kernels::RopeShape ks = qs;
  ks.H = uint32_t(s.KV);
  test::run_once({kernels::rope_forward(qs, bqkv.whole(), {row, 0}, bq.whole(), {}),
                  kernels::rope_forward(ks, bqkv.whole(), {row, k_off}, bk.whole(), {}),
                  kernels::rope_backward(qs, bdq.whole(), {}, bdqkv.whole(), {row, 0}, mode),
                  kernels::rope_backward(ks, bdk.whole(), {}, bdqkv.whole(), {row, k_off}, mode)});
  return {test::read<float>(bq, rows * s.H * s.D), test::read<float>(bk, rows * s.KV * s.D),
          test::read<float>(bdqkv, rows * s.row())};
}

struct RopeInputs {
  std::vector<float> qkv, dq, dk, dqkv0;
};

RopeInputs make_inputs(const Qkv& s, bool accumulate) {
  const std::size_t rows = s.B * s.T;
  RopeInputs in{test::random_floats(rows * s.row(), 71, -2, 2),
                test::random_floats(rows * s.H * s.D, 72),
                test::random_floats(rows * s.KV * s.D, 73),
                {}};
  if (accumulate) in.dqkv0 = test::random_floats(rows * s.row(), 74);
  return in;
}

// Rotations of O(1) values in fp32: measured worst 2.8e-7 absolute at T = 23 and 5.2e-7 at
// T = 4096 against the double reference (the angle itself is formed identically; what differs
// is the device's cos and sin). 2e-6 relative + 2e-6 absolute leaves a margin of ~4.
constexpr double kRtol = 2e-6, kAtol = 2e-6;

void check_against_reference(const Qkv& s, const RopeInputs& in, const RopeRun& g) {
  using test::to_double;
  std::vector<double> q, k;
  ref::rope_forward(q, to_double(columns(in.qkv, s, 0, s.H)), s.dims(s.H));
  ref::rope_forward(k, to_double(columns(in.qkv, s, s.k_offset(), s.KV)), s.dims(s.KV));
  test::require_close(g.q, q, kRtol, kAtol, "q");
  test::require_close(g.k, k, kRtol, kAtol, "k");
  const bool acc = !in.dqkv0.empty();
  const std::size_t rows = s.B * s.T;
  std::vector<double> dq =
      acc ? to_double(columns(in.dqkv0, s, 0, s.H)) : std::vector<double>(rows * s.H * s.D);
  std::vector<double> dk = acc ? to_double(columns(in.dqkv0, s, s.k_offset(), s.KV))
                               : std::vector<double>(rows * s.KV * s.D);
  ref::rope_backward(dq, to_double(in.dq), s.dims(s.H), acc);
  ref::rope_backward(dk, to_double(in.dk), s.dims(s.KV), acc);
  test::require_close(columns(g.dqkv, s, 0, s.H), dq, kRtol, kAtol, "dq");
  test::require_close(columns(g.dqkv, s, s.k_offset(), s.KV), dk, kRtol, kAtol, "dk");
}

// The v columns of dqkv are not rope's: they keep whatever they held, bit for bit.
void require_v_untouched(const Qkv& s, const std::vector<float>& before,
                         const std::vector<float>& after) {
  const std::size_t v_off = s.k_offset() + s.KV * s.D;
  REQUIRE(test::bit_identical(columns(before, s, v_off, s.KV), columns(after, s, v_off, s.KV)));
}

TEST_CASE("rope GPU forward and backward match the reference on grouped-query q and k") {
  for (Qkv s : {Qkv{3, 23, 3, 1, 16, 10000.0f}, Qkv{1, 1, 1, 1, 2, 10000.0f},
                Qkv{2, 7, 4, 2, 6, 10000.0f}, Qkv{1, 4096, 2, 1, 128, 500000.0f},
                Qkv{1, 4096, 2, 1, 64, 500000.0f, {32.0f, 1.0f, 4.0f, 8192}},
                Qkv{3, 23, 3, 1, 8, 10000.0f, {8.0f, 1.0f, 4.0f, 100}},
                Qkv{3, 23, 3, 1, 16, 1000000.0f, linear_scaling(8.0f)}}) {  // Gemma 3's global
    DYNAMIC_SECTION("B " << s.B << " T " << s.T << " heads " << s.H << " KV heads " << s.KV << " D "
                         << s.D << " theta " << s.theta << " llama3 factor " << s.llama3.factor) {
      auto in = make_inputs(s, false);
      auto g = run_gpu(s, in.qkv, in.dq, in.dk, {});
      check_against_reference(s, in, g);
      const std::vector<float> nan(g.dqkv.size(), std::bit_cast<float>(0xFFFFFFFFu));
      require_v_untouched(s, nan, g.dqkv);
    }
  }
}

TEST_CASE("rope backward accumulates onto existing gradients exactly") {
  const Qkv s{3, 23, 3, 1, 16, 10000.0f};
  auto in = make_inputs(s, true);
  auto g = run_gpu(s, in.qkv, in.dq, in.dk, in.dqkv0);
  check_against_reference(s, in, g);
  require_v_untouched(s, in.dqkv0, g.dqkv);
  // One contribution per element: accumulating is exactly old + overwrite.
  auto fresh = run_gpu(s, in.qkv, in.dq, in.dk, {});
  for (std::size_t r = 0; r < s.B * s.T; ++r)
    for (std::size_t c = 0; c < s.k_offset() + s.KV * s.D; ++c) {
      const std::size_t i = r * s.row() + c;
      INFO("dqkv element " << i);
      REQUIRE(g.dqkv[i] == in.dqkv0[i] + fresh.dqkv[i]);
    }
}

TEST_CASE("rope GPU runs are bit-identical") {
  const Qkv s{3, 23, 3, 1, 16, 10000.0f};
  auto in = make_inputs(s, false);
  auto a = run_gpu(s, in.qkv, in.dq, in.dk, {}), b = run_gpu(s, in.qkv, in.dq, in.dk, {});
  REQUIRE(test::bit_identical(a.q, b.q));
  REQUIRE(test::bit_identical(a.k, b.k));
  REQUIRE(test::bit_identical(a.dqkv, b.dqkv));
}

TEST_CASE("rope rejects odd head sizes, bad theta and heads that overrun their rows") {
  Buffer b = test::garbage_buffer<float>(64, "b");
  const kernels::RopeShape ok{1, 2, 2, 8, 10000.0f};
  CHECK_NOTHROW(kernels::rope_forward(ok, b.whole(), {}, b.whole(), {32, 16}));
  auto odd = ok;
  odd.D = 7;
  CHECK_THROWS_AS(kernels::rope_forward(odd, b.whole(), {}, b.whole(), {}), std::invalid_argument);
  auto bad_theta = ok;
  bad_theta.theta = 0.0f;
  CHECK_THROWS_AS(kernels::rope_forward(bad_theta, b.whole(), {}, b.whole(), {}),
                  std::invalid_argument);
  CHECK_THROWS_AS(
      kernels::rope_backward(ok, b.whole(), {}, b.whole(), {32, 17}, kernels::GradWrite::overwrite),
      std::invalid_argument);
}

}  // namespace

// Rotary position embedding forward and backward: the convention on a hand-worked case, the
// reference backward against finite differences, the GPU kernels against the reference on q and
// k inside a fused grouped-query qkv row and at a long Llama 3 context (with and without Llama 3's
// frequency scaling, whose angles are checked against transformers' rule), accumulation, untouched
// columns, bit-identity and the shape checks; then the same for partial RoPE (rotary dims R < D),
// with its pass-through elements bit for bit, in place, packed and in 16 bits.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <tuple>

#include "rope_params.h"
#include "runtime/kernels/rope.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/kernels/storage16_values.h"
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
  std::size_t R = 0;  // rotary dims; 0: all D
  std::size_t row() const { return (H + 2 * KV) * D; }
  std::size_t k_offset() const { return H * D; }
  ref::RopeDims dims(std::size_t heads) const { return {B, T, heads, D, theta, llama3, R}; }
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
  const kernels::RopeShape qs{uint32_t(s.B), uint32_t(s.T), uint32_t(s.H), uint32_t(s.D),
                              s.theta,       s.llama3,      uint32_t(s.R)};
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

// Partial RoPE (rotary dims R < D): Qwen3.5's gated attention turns the first 64 of 256.

TEST_CASE("rope reference with rotary dims R turns pairs (i, i + R/2) at theta^(-2i/R) only") {
  // D = 8, R = 4, theta = 100: inv_freq = 100^(-2i/4) = {1, 0.1} (over the head size it would be
  // {1, 100^(-1/4)}); pairs (0, 2) and (1, 3) turn, elements 4 .. 7 pass through.
  const ref::RopeDims d{1, 3, 1, 8, 100.0f, {}, 4};
  std::vector<double> x(3 * 8), y;
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = 0.5 + 0.25 * double(k % 8) + double(k / 8);
  ref::rope_forward(y, x, d);
  for (std::size_t t = 0; t < 3; ++t) {
    const double* in = &x[t * 8];
    const double* out = &y[t * 8];
    for (std::size_t i = 0; i < 2; ++i) {
      const double a = double(t) * (i == 0 ? 1.0 : 0.1);
      INFO("t " << t << " pair " << i);
      CHECK(out[i] == Approx(in[i] * std::cos(a) - in[i + 2] * std::sin(a)).epsilon(1e-6));
      CHECK(out[i + 2] == Approx(in[i + 2] * std::cos(a) + in[i] * std::sin(a)).epsilon(1e-6));
    }
    for (std::size_t e = 4; e < 8; ++e) CHECK(out[e] == in[e]);
  }
}

TEST_CASE("rope reference backward with rotary dims R < D matches finite differences") {
  for (std::size_t R : {std::size_t(2), std::size_t(6)}) {
    const ref::RopeDims d{2, 5, 3, 12, 10000.0f, {}, R};
    const std::size_t n = d.B * d.T * d.H * d.D;
    auto x = test::random_doubles(n, 63, -2, 2);
    auto weights = test::random_doubles(n, 64);
    std::vector<double> y;
    auto loss = [&] {
      ref::rope_forward(y, x, d);
      return test::weighted_sum(y, weights);
    };
    std::vector<double> dx(n);
    ref::rope_backward(dx, weights, d, false);
    INFO("R " << R);
    test::require_matches_finite_differences(loss, x, dx, "dx");
  }
}

// The pass-through elements (R .. D of every head) of a compact [rows, heads, D] tensor.
std::vector<float> pass_through(const std::vector<float>& x, std::size_t D, std::size_t R) {
  std::vector<float> out;
  for (std::size_t k = 0; k < x.size(); ++k)
    if (k % D >= R) out.push_back(x[k]);
  return out;
}

// The forward copies q's and k's pass-through elements, the backward (overwriting) dq's and dk's
// into dqkv, bit for bit.
void require_passed_through(const Qkv& s, const RopeInputs& in, const RopeRun& g) {
  const auto pass = [&](const std::vector<float>& x) { return pass_through(x, s.D, s.R); };
  REQUIRE(!pass(g.q).empty());
  REQUIRE(test::bit_identical(pass(g.q), pass(columns(in.qkv, s, 0, s.H))));
  REQUIRE(test::bit_identical(pass(g.k), pass(columns(in.qkv, s, s.k_offset(), s.KV))));
  REQUIRE(test::bit_identical(pass(columns(g.dqkv, s, 0, s.H)), pass(in.dq)));
  REQUIRE(test::bit_identical(pass(columns(g.dqkv, s, s.k_offset(), s.KV)), pass(in.dk)));
}

// The rotated elements within the whole-head tolerance: measured worst on llvmpipe 4.7e-7
// absolute, at T = 4096 with Qwen3.5's D 256, R 64 and base 1e7 (0.22x the allowed error).
TEST_CASE("rope GPU with rotary dims R matches the reference and passes the rest through") {
  const Llama3Scaling small{8.0f, 1.0f, 4.0f, 100};
  for (Qkv s : {Qkv{3, 23, 3, 1, 16, 10000.0f, {}, 4}, Qkv{3, 23, 3, 1, 16, 10000.0f, {}, 8},
                Qkv{3, 23, 3, 1, 16, 10000.0f, {}, 16}, Qkv{2, 7, 5, 1, 12, 10000.0f, {}, 6},
                Qkv{1, 3, 1, 1, 4, 10000.0f, {}, 2}, Qkv{3, 23, 3, 1, 16, 10000.0f, small, 8},
                Qkv{2, 33, 3, 1, 256, 10000000.0f, {}, 64},  // Qwen3.5's head and base
                Qkv{1, 4096, 2, 1, 256, 10000000.0f, {}, 64}}) {
    DYNAMIC_SECTION("B " << s.B << " T " << s.T << " heads " << s.H << " KV heads " << s.KV << " D "
                         << s.D << " R " << s.R << " llama3 factor " << s.llama3.factor) {
      auto in = make_inputs(s, false);
      auto g = run_gpu(s, in.qkv, in.dq, in.dk, {});
      check_against_reference(s, in, g);
      const std::vector<float> nan(g.dqkv.size(), std::bit_cast<float>(0xFFFFFFFFu));
      require_v_untouched(s, nan, g.dqkv);
      if (s.R < s.D) require_passed_through(s, in, g);
    }
  }
}

TEST_CASE("rope backward with rotary dims R < D accumulates rotated and passed elements exactly") {
  const Qkv s{3, 23, 3, 1, 16, 10000.0f, {}, 4};
  auto in = make_inputs(s, true);
  auto g = run_gpu(s, in.qkv, in.dq, in.dk, in.dqkv0);
  check_against_reference(s, in, g);
  require_v_untouched(s, in.dqkv0, g.dqkv);
  auto fresh = run_gpu(s, in.qkv, in.dq, in.dk, {});
  require_passed_through(s, in, fresh);
  for (std::size_t r = 0; r < s.B * s.T; ++r)
    for (std::size_t c = 0; c < s.k_offset() + s.KV * s.D; ++c) {
      const std::size_t i = r * s.row() + c;
      INFO("dqkv element " << i);
      REQUIRE(g.dqkv[i] == in.dqkv0[i] + fresh.dqkv[i]);
    }
}

TEST_CASE("rope with rotary dims R: GPU runs are bit-identical") {
  const Qkv s{2, 33, 3, 1, 256, 10000000.0f, {}, 64};
  auto in = make_inputs(s, false);
  auto a = run_gpu(s, in.qkv, in.dq, in.dk, {}), b = run_gpu(s, in.qkv, in.dq, in.dk, {});
  REQUIRE(test::bit_identical(a.q, b.q));
  REQUIRE(test::bit_identical(a.k, b.k));
  REQUIRE(test::bit_identical(a.dqkv, b.dqkv));
}

TEST_CASE("rope with rotary dims equal to the head size is the whole-head dispatch") {
  Buffer x = test::garbage_buffer<float>(2 * 7 * 3 * 10, "x"),
         y = test::garbage_buffer<float>(2 * 7 * 3 * 10, "y");
  kernels::RopeShape whole{2, 7, 3, 10, 10000.0f, {8.0f, 1.0f, 4.0f, 100}};
  kernels::RopeShape full = whole;
  full.R = 10;
  for (bool backward : {false, true}) {
    const auto make = [&](const kernels::RopeShape& s) {
      return backward ? kernels::rope_backward(s, x.whole(), {}, y.whole(), {},
                                               kernels::GradWrite::accumulate)
                      : kernels::rope_forward(s, x.whole(), {}, y.whole(), {});
    };
    const Dispatch a = make(whole), b = make(full);
    CHECK(a.kernel == b.kernel);
    CHECK(a.groups == b.groups);
    CHECK(a.push == b.push);
  }
}

// rope of a compact [B, T, H, D] tensor, in place or into a fresh buffer, positions given or plain.
std::vector<float> compact_rope(const kernels::RopeShape& s, const std::vector<float>& x,
                                bool backward, bool in_place,
                                const std::vector<uint32_t>* positions = nullptr) {
  Buffer in = test::upload_buffer(x, "x");
  Buffer fresh = test::garbage_buffer<float>(x.size(), "y");
  Buffer pos = test::upload_buffer(positions ? *positions : std::vector<uint32_t>{0}, "pos");
  const BufferSlice p = positions ? pos.whole() : BufferSlice{};
  const BufferSlice out = in_place ? in.whole() : fresh.whole();
  test::run_once({backward ? kernels::rope_backward(s, in.whole(), {}, out, {},
                                                    kernels::GradWrite::overwrite, p)
                           : kernels::rope_forward(s, in.whole(), {}, out, {}, DType::f32, p)});
  return test::read<float>(in_place ? in : fresh, x.size());
}

TEST_CASE("rope in place with rotary dims R < D leaves the rest and turns as out of place") {
  const kernels::RopeShape s{2, 9, 3, 16, 10000.0f, {}, 4};
  const auto x = test::random_floats(2 * 9 * 3 * 16, 75, -2, 2);
  for (bool backward : {false, true}) {
    INFO("backward " << backward);
    REQUIRE(test::bit_identical(compact_rope(s, x, backward, true),
                                compact_rope(s, x, backward, false)));
  }
  // In place the dispatch has no work for the pass-through elements: R/2 items per head.
  Buffer b = test::upload_buffer(x, "x");
  const Dispatch d = kernels::rope_forward(s, b.whole(), {}, b.whole(), {});
  push::RopeParams p;
  REQUIRE(d.push.size() == sizeof p);
  std::memcpy(&p, d.push.data(), sizeof p);
  CHECK(p.copy_rest == 0);
  CHECK(p.R == 4);
}

TEST_CASE("packed rope with rotary dims R < D turns each example from position 0, as alone") {
  // One row of 12: examples of 5, 1 and 6 tokens.
  const std::vector<uint32_t> positions = {0, 1, 2, 3, 4, 0, 0, 1, 2, 3, 4, 5};
  const std::size_t starts[] = {0, 5, 6, 12};
  const uint32_t T = 12, H = 3, D = 16, width = H * D;
  const auto x = test::random_floats(T * width, 76, -2, 2);
  kernels::RopeShape s{1, T, H, D, 10000.0f, {}, 8};
  for (bool backward : {false, true}) {
    INFO("backward " << backward);
    const auto packed = compact_rope(s, x, backward, false, &positions);
    REQUIRE(test::bit_identical(pass_through(packed, D, 8), pass_through(x, D, 8)));
    for (std::size_t e = 0; e < 3; ++e) {
      const auto from = std::ptrdiff_t(starts[e] * width),
                 to = std::ptrdiff_t(starts[e + 1] * width);
      kernels::RopeShape alone = s;
      alone.T = uint32_t(starts[e + 1] - starts[e]);
      const std::vector<float> xe(x.begin() + from, x.begin() + to);
      REQUIRE(test::bit_identical(std::vector<float>(packed.begin() + from, packed.begin() + to),
                                  compact_rope(alone, xe, backward, false)));
    }
    REQUIRE_FALSE(test::bit_identical(packed, compact_rope(s, x, backward, false)));
  }
}

TEST_CASE("16-bit rope with rotary dims R < D copies the rest and rounds the turned fp32 values") {
  const kernels::RopeShape s{2, 7, 3, 12, 10000.0f, {}, 4};
  const std::size_t n = 2 * 7 * 3 * 12;
  for (DType t : {DType::f16, DType::bf16}) {
    INFO(dtype_name(t));
    const auto x = test::rounded(test::random_floats(n, 77, -2, 2), t);
    std::vector<uint16_t> bits(n);
    for (std::size_t k = 0; k < n; ++k) bits[k] = test::narrow(x[k], t);
    Buffer in = test::upload_buffer(bits, "x16");
    Buffer out = test::garbage_buffer<uint16_t>(n, "y16");
    test::run_once({kernels::rope_forward(s, in.whole(), {}, out.whole(), {}, t)});
    const auto got = test::read<uint16_t>(out, n);
    const auto f32 = compact_rope(s, x, false, false);
    std::vector<uint16_t> want(n);
    for (std::size_t k = 0; k < n; ++k) want[k] = k % 12 >= 4 ? bits[k] : test::narrow(f32[k], t);
    REQUIRE(test::bit_identical(got, want));
  }
}

TEST_CASE("rope rejects rotary dims that are odd or exceed the head size") {
  Buffer b = test::garbage_buffer<float>(64, "b"), c = test::garbage_buffer<float>(64, "c");
  kernels::RopeShape s{1, 2, 2, 8, 10000.0f};
  for (uint32_t R : {2u, 4u, 8u}) {
    s.R = R;
    CHECK_NOTHROW(kernels::rope_forward(s, b.whole(), {}, c.whole(), {}));
  }
  for (uint32_t R : {3u, 7u, 10u}) {
    s.R = R;
    INFO("R " << R);
    CHECK_THROWS_AS(kernels::rope_forward(s, b.whole(), {}, c.whole(), {}), std::invalid_argument);
    CHECK_THROWS_AS(
        kernels::rope_backward(s, b.whole(), {}, c.whole(), {}, kernels::GradWrite::overwrite),
        std::invalid_argument);
  }
}

}  // namespace

// The gated delta rule's chunkwise (WY) reference against the sequential one (the mathematical
// truth) in double and in float arithmetic, and its backward against finite differences: packed
// rows with restarts inside blocks, at a block's first and last token, GQA, dk != dv, T not a
// multiple of the block length.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/kernels/kernel_checks.h"
#include "tests/reference/gated_delta_rule.h"
#include "tests/reference/gated_delta_rule_chunked.h"
#include "tests/support/random_fill.h"

using namespace remat;

namespace {

struct Case {
  ref::GdrShape shape;
  std::size_t C = 4;
  bool s0 = true, ds_final = true;
  // Example lengths along each row, repeated (empty: one example per row); a row's first
  // example starts at t = 0 only in row 0, the others continue one from s0.
  std::vector<uint32_t> examples;
};

void normalise_rows(std::vector<double>& x, std::size_t d, double scale) {
  for (std::size_t r = 0; r < x.size() / d; ++r) {
    double n = 0;
    for (std::size_t i = 0; i < d; ++i) n += x[r * d + i] * x[r * d + i];
    for (std::size_t i = 0; i < d; ++i) x[r * d + i] *= scale / std::sqrt(n);
  }
}

// Inputs in Qwen3.5's ranges (tests/kernels/gated_delta_rule_test.cpp says which), in float.
struct Prepared {
  ref::GdrInputs in;
  std::vector<double> d_o, ds_final;
};

Prepared prepare(const Case& c, uint64_t seed) {
  const auto& s = c.shape;
  const std::size_t bt = s.rows * s.T;
  auto floats = [](std::vector<double> x) {
    for (double& v : x) v = double(float(v));
    return x;
  };
  Prepared p;
  ref::GdrInputs& in = p.in;
  in.q = test::random_doubles(bt * s.Hk * s.dk, seed + 1);
  in.k = test::random_doubles(bt * s.Hk * s.dk, seed + 2);
  normalise_rows(in.q, s.dk, 1.0 / std::sqrt(double(s.dk)));
  normalise_rows(in.k, s.dk, 1.0);
  in.q = floats(in.q), in.k = floats(in.k);
  in.v = floats(test::random_doubles(bt * s.Hv * s.dv, seed + 3));
  in.g = floats(test::random_doubles(bt * s.Hv, seed + 4, -1.5, -0.01));
  in.beta = floats(test::random_doubles(bt * s.Hv, seed + 5, 0.05, 0.95));
  if (c.s0) in.s0 = floats(test::random_doubles(s.rows * s.Hv * s.dk * s.dv, seed + 6));
  if (!c.examples.empty()) {
    in.positions.resize(bt);
    for (std::size_t r = 0; r < s.rows; ++r) {
      std::size_t e = 0;
      uint32_t p = r == 0 ? 0 : 2;
      for (std::size_t t = 0; t < s.T; ++t) {
        in.positions[r * s.T + t] = p;
        if (++p >= c.examples[e]) p = 0, e = (e + 1) % c.examples.size();
      }
    }
  }
  p.d_o = floats(test::random_doubles(in.v.size(), seed + 7));
  if (c.ds_final) p.ds_final = floats(test::random_doubles(s.rows * s.Hv * s.dk * s.dv, seed + 8));
  return p;
}

struct Outputs {
  std::vector<double> o, sT;
  ref::GdrGrads gr;
};

Outputs sequential(const Case& c, const Prepared& p) {
  Outputs x;
  ref::gated_delta_rule_forward(c.shape, p.in, x.o, x.sT);
  ref::gated_delta_rule_backward(c.shape, p.in, p.d_o, p.ds_final, x.gr);
  return x;
}

Outputs chunked(const Case& c, const Prepared& p, ref::GdrArithmetic arith) {
  Outputs x;
  ref::chunked_gated_delta_rule_forward(c.shape, p.in, c.C, arith, x.o, x.sT);
  ref::chunked_gated_delta_rule_backward(c.shape, p.in, c.C, arith, p.d_o, p.ds_final, x.gr);
  return x;
}

void require_close(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                   double atol, const char* what) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, worst = 0;
  double worst_err = -1;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - want[i]), allowed = rtol * std::abs(want[i]) + atol;
    if (!(err <= allowed)) ++bad;
    if (!(err <= worst_err)) worst_err = err, worst = i;
  }
  INFO(what << ": worst error " << worst_err << ", " << bad << " of " << got.size()
            << " outside rtol " << rtol << " atol " << atol << "; worst at " << worst << ": "
            << got[worst] << " want " << want[worst]);
  REQUIRE(bad == 0);
}

void require_all_close(const Outputs& got, const Outputs& want, double rtol, double atol) {
  require_close(got.o, want.o, rtol, atol, "o");
  require_close(got.sT, want.sT, rtol, atol, "S_T");
  require_close(got.gr.dq, want.gr.dq, rtol, atol, "dq");
  require_close(got.gr.dk, want.gr.dk, rtol, atol, "dk");
  require_close(got.gr.dv, want.gr.dv, rtol, atol, "dv");
  require_close(got.gr.dg, want.gr.dg, rtol, atol, "dg");
  require_close(got.gr.dbeta, want.gr.dbeta, rtol, atol, "dbeta");
  require_close(got.gr.ds0, want.gr.ds0, rtol, atol, "dS_0");
}

// rows, T, Hk, Hv, dk, dv; block length; s0, dS_T; example lengths.
const Case kCases[] = {
    {{1, 1, 1, 1, 1, 1}, 4},
    {{2, 23, 1, 2, 5, 3}, 4, true, true, {3, 1, 6, 2, 5}},  // restarts inside blocks, T % C 3
    {{2, 16, 1, 1, 3, 4}, 4, false, true, {4, 3, 1}},  // restarts at a block's first, last token
    {{1, 19, 2, 4, 8, 6}, 8, true, false, {}},         // GQA, one example per row
    {{1, 13, 1, 2, 6, 9}, 1, true, true, {2, 7}},      // C 1: the sequential steps
    {{2, 11, 1, 1, 4, 4}, 64, true, true, {5}},        // one block longer than T
};

std::string name(const Case& c) {
  const auto& s = c.shape;
  return "rows " + std::to_string(s.rows) + " T " + std::to_string(s.T) + " Hk " +
         std::to_string(s.Hk) + " Hv " + std::to_string(s.Hv) + " dk " + std::to_string(s.dk) +
         " dv " + std::to_string(s.dv) + " C " + std::to_string(c.C) + " examples " +
         std::to_string(c.examples.size());
}

// Both in double: the forms differ only in the order of their sums (over at most C + dk terms of
// magnitude <= a few, through T = (I + A)^-1 whose entries stay below 10 here), so they agree to
// a few hundred double epsilons (measured worst 5.6e-16, dq); 1e-12 catches any dropped or
// misplaced term (each is at least 1e-4 of the outputs here).
TEST_CASE("gated delta rule chunkwise reference in double matches the sequential one") {
  for (const Case& c : kCases) {
    DYNAMIC_SECTION(name(c)) {
      const Prepared p = prepare(c, 40 + c.shape.T);
      require_all_close(chunked(c, p, ref::GdrArithmetic::f64), sequential(c, p), 1e-12, 1e-12);
    }
  }
}

// In float the chunkwise form must keep float32's accuracy: the same bound the GPU kernels meet
// against the sequential reference (tests/kernels/gated_delta_rule_test.cpp: 1e-4 relative, 5e-6
// absolute on O(1) outputs). Measured worst: 1.2e-7 absolute (dq, dS_0), float32's rounding of
// sums of O(1) terms.
TEST_CASE("gated delta rule chunkwise reference in float matches the sequential one") {
  for (const Case& c : kCases) {
    DYNAMIC_SECTION(name(c)) {
      const Prepared p = prepare(c, 40 + c.shape.T);
      require_all_close(chunked(c, p, ref::GdrArithmetic::f32), sequential(c, p), 1e-4, 5e-6);
    }
  }
}

TEST_CASE("gated delta rule chunkwise reference backward matches finite differences") {
  const Case c{{2, 10, 1, 2, 3, 4}, 4, true, true, {3, 4, 1}};
  Prepared p = prepare(c, 70);
  ref::GdrInputs& in = p.in;
  auto loss = [&] {
    std::vector<double> o, sT;
    ref::chunked_gated_delta_rule_forward(c.shape, in, c.C, ref::GdrArithmetic::f64, o, sT);
    return test::weighted_sum(o, p.d_o) + test::weighted_sum(sT, p.ds_final);
  };
  ref::GdrGrads gr;
  ref::chunked_gated_delta_rule_backward(c.shape, in, c.C, ref::GdrArithmetic::f64, p.d_o,
                                         p.ds_final, gr);
  test::require_matches_finite_differences(loss, in.q, gr.dq, "dq");
  test::require_matches_finite_differences(loss, in.k, gr.dk, "dk");
  test::require_matches_finite_differences(loss, in.v, gr.dv, "dv");
  test::require_matches_finite_differences(loss, in.g, gr.dg, "dg");
  test::require_matches_finite_differences(loss, in.beta, gr.dbeta, "dbeta");
  test::require_matches_finite_differences(loss, in.s0, gr.ds0, "ds0");
}

}  // namespace

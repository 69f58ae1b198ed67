// Gated DeltaNet's decay and beta gates: PyTorch's softplus threshold, the reference backward
// against finite differences, the GPU kernels against the reference over softplus's and
// sigmoid's tails, accumulation, and bit-identity.
#include <catch2/catch.hpp>

#include <cmath>

#include "runtime/kernels/gdn_gates.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/gdn_gates.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// torch.nn.functional.softplus(x) with beta 1, threshold 20: x itself above 20.
TEST_CASE("gdn_gates reference softplus is PyTorch's, threshold 20") {
  CHECK(ref::softplus(20.5) == 20.5);
  CHECK(ref::softplus(19.5) == std::log1p(std::exp(19.5)));
  CHECK(ref::softplus(-30.0) == std::log1p(std::exp(-30.0)));
}

TEST_CASE("gdn_gates reference backward matches finite differences") {
  const std::size_t tokens = 5, heads = 3;
  // a + dt_bias within (-6, 6): away from softplus's threshold, where it is not smooth.
  auto a = test::random_doubles(tokens * heads, 101, -4, 4);
  auto b = test::random_doubles(tokens * heads, 102, -6, 6);
  auto a_log = test::random_doubles(heads, 103, -1, 2);
  auto dt_bias = test::random_doubles(heads, 104, -2, 2);
  auto wg = test::random_doubles(tokens * heads, 105),
       wb = test::random_doubles(tokens * heads, 106);
  std::vector<double> g, beta;
  auto loss = [&] {
    ref::gdn_gates_forward(g, beta, a, b, a_log, dt_bias, tokens, heads);
    return test::weighted_sum(g, wg) + test::weighted_sum(beta, wb);
  };
  std::vector<double> da(a.size()), db(b.size()), da_log(heads), ddt(heads);
  ref::gdn_gates_backward(da, db, da_log, ddt, wg, wb, a, b, a_log, dt_bias, tokens, heads, {});
  test::require_matches_finite_differences(loss, a, da, "da");
  test::require_matches_finite_differences(loss, b, db, "db");
  test::require_matches_finite_differences(loss, a_log, da_log, "dA_log");
  test::require_matches_finite_differences(loss, dt_bias, ddt, "ddt_bias");
}

struct GateInputs {
  std::size_t tokens, heads;
  std::vector<float> a, b, a_log, dt_bias, dg, dbeta;
  std::vector<float> da0, db0, da_log0, ddt0;  // prior gradients (empty: overwrite)
};

struct GateRun {
  std::vector<float> g, beta, da, db, da_log, ddt;
};

// a over softplus's range and both sides of its threshold (a + dt_bias from -40 to 40), b over
// sigmoid's tails, A_log as initialised (log of 0.01 .. 16).
GateInputs make_inputs(std::size_t tokens, std::size_t heads, bool accumulate = false) {
  const std::size_t n = tokens * heads;
  GateInputs in{tokens,
                heads,
                test::random_floats(n, 111, -40, 40),
                test::random_floats(n, 112, -30, 30),
                test::random_floats(heads, 113, std::log(0.01f), std::log(16.0f)),
                test::random_floats(heads, 114, -1, 1),
                test::random_floats(n, 115),
                test::random_floats(n, 116)};
  const float tails[] = {0.0f, 1e-4f, -1e-4f, 19.99f, 20.01f, -100.0f, 100.0f};
  for (std::size_t i = 0; i < std::size(tails) && i < n; ++i) {
    in.a[i * (n / std::size(tails))] = tails[i] - in.dt_bias[(i * (n / std::size(tails))) % heads];
    in.b[i * (n / std::size(tails))] = tails[i];
  }
  if (accumulate) {
    in.da0 = test::random_floats(n, 117), in.db0 = test::random_floats(n, 118);
    in.da_log0 = test::random_floats(heads, 119), in.ddt0 = test::random_floats(heads, 120);
  }
  return in;
}

GateRun run_gpu(const GateInputs& in) {
  const std::size_t n = in.tokens * in.heads;
  const bool acc = !in.da0.empty();
  auto grad = [&](const std::vector<float>& v, std::size_t count, const char* name) {
    return acc ? test::upload_buffer(v, name) : test::garbage_buffer<float>(count, name);
  };
  Buffer a = test::upload_buffer(in.a, "a"), b = test::upload_buffer(in.b, "b"),
         a_log = test::upload_buffer(in.a_log, "A_log"),
         dt_bias = test::upload_buffer(in.dt_bias, "dt_bias"),
         dg = test::upload_buffer(in.dg, "dg"), dbeta = test::upload_buffer(in.dbeta, "dbeta"),
         g = test::garbage_buffer<float>(n, "g"), beta = test::garbage_buffer<float>(n, "beta");
  Buffer da = grad(in.da0, n, "da"), db = grad(in.db0, n, "db"),
         da_log = grad(in.da_log0, in.heads, "dA_log"), ddt = grad(in.ddt0, in.heads, "ddt_bias");
  const kernels::GdnGatesShape s{uint32_t(in.tokens), uint32_t(in.heads)};
  const auto mode = acc ? kernels::GradWrite::accumulate : kernels::GradWrite::overwrite;
  const kernels::GdnGatesGrads grads{da.whole(), db.whole(), da_log.whole(), ddt.whole(), mode,
                                     mode,       mode};
  test::run_once({kernels::gdn_gates_forward(s, a.whole(), b.whole(), a_log.whole(),
                                             dt_bias.whole(), g.whole(), beta.whole()),
                  kernels::gdn_gates_backward(s, dg.whole(), dbeta.whole(), a.whole(), b.whole(),
                                              a_log.whole(), dt_bias.whole(), grads)});
  return {test::read<float>(g, n),
          test::read<float>(beta, n),
          test::read<float>(da, n),
          test::read<float>(db, n),
          test::read<float>(da_log, in.heads),
          test::read<float>(ddt, in.heads)};
}

// Elementwise fp32 with exp and log: 1e-5 relative, and 1e-33 absolute, so sigmoid's and
// softplus's tails (a gate of 1e-17, 1 - beta of 1e-13) compare relatively. The floor: the
// kernels clamp exp(-x) at exp(80) (swiglu.glsl's exp_neg, keeping it finite), so beta and
// softplus' never fall below 1 / (1 + e^80) = 1.8e-35 where the reference's reach 4e-44 at
// -100; da multiplies that by up to |A| = 16. Added onto prior gradients, da (terms up to |A| = 16)
// and db can cancel against them, leaving the rounding of an O(16) sum, half an ulp of 16 or 1e-6,
// as a small result's floor. The per-head sums add tokens terms of up to ~16, so their floor grows
// with them.
void check_against_reference(const GateInputs& in, const GateRun& r) {
  using test::to_double;
  const bool acc = !in.da0.empty();
  const std::size_t n = in.tokens * in.heads;
  std::vector<double> g, beta;
  ref::gdn_gates_forward(g, beta, to_double(in.a), to_double(in.b), to_double(in.a_log),
                         to_double(in.dt_bias), in.tokens, in.heads);
  std::vector<double> da = acc ? to_double(in.da0) : std::vector<double>(n),
                      db = acc ? to_double(in.db0) : std::vector<double>(n),
                      da_log = acc ? to_double(in.da_log0) : std::vector<double>(in.heads),
                      ddt = acc ? to_double(in.ddt0) : std::vector<double>(in.heads);
  ref::gdn_gates_backward(da, db, da_log, ddt, to_double(in.dg), to_double(in.dbeta),
                          to_double(in.a), to_double(in.b), to_double(in.a_log),
                          to_double(in.dt_bias), in.tokens, in.heads, {acc, acc, acc});
  const double tiny = 1e-33;
  test::require_close(r.g, g, 1e-5, tiny, "g");
  test::require_close(r.beta, beta, 1e-5, tiny, "beta");
  const double grad_floor = acc ? 1e-6 : tiny;
  test::require_close(r.da, da, 1e-5, grad_floor, "da");
  test::require_close(r.db, db, 1e-5, grad_floor, "db");
  const double floor = 1e-6 * double(in.tokens);
  test::require_close(r.da_log, da_log, 1e-5, floor, "dA_log");
  test::require_close(r.ddt, ddt, 1e-5, floor, "ddt_bias");
}

TEST_CASE("gdn_gates GPU forward and backward match the reference") {
  // Odd sizes, one token, Qwen3.5-0.8B's 16 value heads over B2 T300, and more tokens than
  // llvmpipe's 65535 loop iterations (each invocation strides over them).
  for (auto [tokens, heads] :
       {std::pair<std::size_t, std::size_t>{37, 5}, {1, 1}, {600, 16}, {70000, 2}}) {
    for (bool acc : {false, true}) {
      DYNAMIC_SECTION("tokens " << tokens << " heads " << heads << " accumulate " << acc) {
        auto in = make_inputs(tokens, heads, acc);
        check_against_reference(in, run_gpu(in));
      }
    }
  }
}

TEST_CASE("gdn_gates backward accumulates onto existing gradients") {
  auto in = make_inputs(129, 7, true);
  const GateRun r = run_gpu(in);
  auto fresh = in;
  fresh.da0.clear(), fresh.db0.clear(), fresh.da_log0.clear(), fresh.ddt0.clear();
  const GateRun o = run_gpu(fresh);
  for (std::size_t i = 0; i < r.da.size(); ++i) {
    INFO("element " << i);
    REQUIRE(r.da[i] == in.da0[i] + o.da[i]);
    REQUIRE(r.db[i] == in.db0[i] + o.db[i]);
  }
  for (std::size_t h = 0; h < in.heads; ++h) {
    INFO("head " << h);
    REQUIRE(r.da_log[h] == in.da_log0[h] + o.da_log[h]);
    REQUIRE(r.ddt[h] == in.ddt0[h] + o.ddt[h]);
  }
}

// LoRA freezes A_log and dt_bias: the backward gets no buffers for their gradients, writes da
// and db as ever, and leaves A_log and dt_bias (bound in their place) as they were.
TEST_CASE("gdn_gates backward with frozen A_log and dt_bias writes da and db alone") {
  const GateInputs in = make_inputs(300, 16, false);
  const GateRun full = run_gpu(in);
  const std::size_t n = in.tokens * in.heads;
  Buffer a = test::upload_buffer(in.a, "a"), b = test::upload_buffer(in.b, "b"),
         a_log = test::upload_buffer(in.a_log, "A_log"),
         dt_bias = test::upload_buffer(in.dt_bias, "dt_bias"),
         dg = test::upload_buffer(in.dg, "dg"), dbeta = test::upload_buffer(in.dbeta, "dbeta"),
         da = test::garbage_buffer<float>(n, "da"), db = test::garbage_buffer<float>(n, "db");
  const kernels::GdnGatesShape s{uint32_t(in.tokens), uint32_t(in.heads)};
  const kernels::GdnGatesGrads grads{da.whole(), db.whole(), {}, {}};
  test::run_once({kernels::gdn_gates_backward(s, dg.whole(), dbeta.whole(), a.whole(), b.whole(),
                                              a_log.whole(), dt_bias.whole(), grads)});
  CHECK(test::bit_identical(test::read<float>(da, n), full.da));
  CHECK(test::bit_identical(test::read<float>(db, n), full.db));
  CHECK(test::bit_identical(test::read<float>(a_log, in.heads), in.a_log));
  CHECK(test::bit_identical(test::read<float>(dt_bias, in.heads), in.dt_bias));
}

TEST_CASE("gdn_gates GPU runs are bit-identical") {
  auto in = make_inputs(1000, 16, true);
  const GateRun a = run_gpu(in), b = run_gpu(in);
  REQUIRE(test::bit_identical(a.g, b.g));
  REQUIRE(test::bit_identical(a.beta, b.beta));
  REQUIRE(test::bit_identical(a.da, b.da));
  REQUIRE(test::bit_identical(a.db, b.db));
  REQUIRE(test::bit_identical(a.da_log, b.da_log));
  REQUIRE(test::bit_identical(a.ddt, b.ddt));
}

}  // namespace

// SwiGLU forward and backward: the reference backward against finite differences, the GPU
// kernels against the reference (sigmoid's tails included), accumulation of dg and du each, and
// bit-identity; each also for Gemma's GeGLU (gelu_gate: the tanh GELU in place of silu).
#include <catch2/catch.hpp>

#include "runtime/kernels/gelu.h"
#include "runtime/kernels/swiglu.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/swiglu.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

TEST_CASE("swiglu reference backward matches finite differences") {
  const bool gelu_gate = GENERATE(false, true);
  INFO("gelu gate " << gelu_gate);
  auto g = test::random_doubles(64, 81, -6, 6);
  auto u = test::random_doubles(64, 82, -2, 2);
  auto weights = test::random_doubles(64, 83);
  std::vector<double> h;
  auto loss = [&] {
    ref::swiglu_forward(h, g, u, gelu_gate);
    return test::weighted_sum(h, weights);
  };
  std::vector<double> dg(64), du(64);
  ref::swiglu_backward(dg, du, weights, g, u, false, false, gelu_gate);
  test::require_matches_finite_differences(loss, g, dg, "dg");
  test::require_matches_finite_differences(loss, u, du, "du");
}

// Gate pre-activations of a Llama MLP, plus the tails where exp over- and underflows.
std::vector<float> gate_inputs(std::size_t n) {
  auto g = test::random_floats(n, 84 + n, -8, 8);
  const float tails[] = {0.0f,   -0.0f, 1e-30f, -1e-30f, 20.0f,
                         -20.0f, 50.0f, -50.0f, 100.0f,  -100.0f};
  for (std::size_t i = 0; i < std::size(tails) && i < n; ++i)
    g[i * (n / std::size(tails))] = tails[i];
  return g;
}

struct SwigluInputs {
  std::vector<float> g, u, dh;
  std::vector<float> dg0, du0;  // prior gradient contents (empty: overwrite)
  bool gelu_gate = false;       // GeGLU
};

SwigluInputs make_inputs(std::size_t n, bool gelu_gate = false) {
  return {gate_inputs(n), test::random_floats(n, 85, -2, 2), test::random_floats(n, 86), {}, {},
          gelu_gate};
}

struct SwigluRun {
  std::vector<float> h, dg, du;
};

SwigluRun run_gpu(const SwigluInputs& in) {
  const auto n = uint32_t(in.g.size());
  const bool acc_g = !in.dg0.empty(), acc_u = !in.du0.empty();
  using kernels::GradWrite;
  Buffer g = test::upload_buffer(in.g, "g"), u = test::upload_buffer(in.u, "u"),
         dh = test::upload_buffer(in.dh, "dh");
  Buffer h = test::garbage_buffer<float>(n, "h");
  Buffer dg = acc_g ? test::upload_buffer(in.dg0, "dg") : test::garbage_buffer<float>(n, "dg");
  Buffer du = acc_u ? test::upload_buffer(in.du0, "du") : test::garbage_buffer<float>(n, "du");
  test::run_once(
      {kernels::swiglu_forward(n, g.whole(), u.whole(), h.whole(), DType::f32, in.gelu_gate),
       kernels::swiglu_backward(n, dh.whole(), g.whole(), u.whole(), dg.whole(), du.whole(),
                                acc_g ? GradWrite::accumulate : GradWrite::overwrite,
                                acc_u ? GradWrite::accumulate : GradWrite::overwrite, DType::f32,
                                in.gelu_gate)});
  return {test::read<float>(h, n), test::read<float>(dg, n), test::read<float>(du, n)};
}

// Elementwise: 1e-5 relative. Absolute floors far below the O(1) values: 1e-7 for h (|h| < 1e-7
// only in sigmoid's far negative tail), 1e-6 for dg and du, because silu' crosses zero near
// g = -1.28 where its two terms cancel (gelu' near g = -0.75).
void check_against_reference(const SwigluInputs& in, const SwigluRun& r) {
  using test::to_double;
  std::vector<double> h;
  ref::swiglu_forward(h, to_double(in.g), to_double(in.u), in.gelu_gate);
  std::vector<double> dg = in.dg0.empty() ? std::vector<double>(in.g.size()) : to_double(in.dg0);
  std::vector<double> du = in.du0.empty() ? std::vector<double>(in.g.size()) : to_double(in.du0);
  ref::swiglu_backward(dg, du, to_double(in.dh), to_double(in.g), to_double(in.u), !in.dg0.empty(),
                       !in.du0.empty(), in.gelu_gate);
  test::require_close(r.h, h, 1e-5, 1e-7, "h");
  test::require_close(r.dg, dg, 1e-5, 1e-6, "dg");
  test::require_close(r.du, du, 1e-5, 1e-6, "du");
}

TEST_CASE("swiglu GPU forward and backward match the reference") {
  // B=3, T=23, an odd intermediate size 88; tiny; and a small Llama MLP at B=4, T=64, F=1536.
  for (std::size_t n :
       {std::size_t(3 * 23 * 88), std::size_t(1), std::size_t(13), std::size_t(4 * 64 * 1536)}) {
    for (bool gelu_gate : {false, true}) {
      DYNAMIC_SECTION("n = " << n << " gelu gate " << gelu_gate) {
        auto in = make_inputs(n, gelu_gate);
        check_against_reference(in, run_gpu(in));
      }
    }
  }
}

TEST_CASE("swiglu backward accumulates dg and du each, exactly") {
  const std::size_t n = 3 * 23 * 88;
  const bool gelu_gate = GENERATE(false, true);
  const auto fresh = run_gpu(make_inputs(n, gelu_gate));
  for (auto [acc_g, acc_u] : {std::pair{true, false}, {false, true}, {true, true}}) {
    INFO("accumulate dg " << acc_g << " du " << acc_u << " gelu gate " << gelu_gate);
    auto in = make_inputs(n, gelu_gate);
    if (acc_g) in.dg0 = test::random_floats(n, 87);
    if (acc_u) in.du0 = test::random_floats(n, 88);
    const auto r = run_gpu(in);
    check_against_reference(in, r);
    for (std::size_t i = 0; i < n; ++i) {
      INFO("element " << i);
      REQUIRE(r.dg[i] == (acc_g ? in.dg0[i] + fresh.dg[i] : fresh.dg[i]));
      REQUIRE(r.du[i] == (acc_u ? in.du0[i] + fresh.du[i] : fresh.du[i]));
    }
  }
}

TEST_CASE("swiglu GPU runs are bit-identical") {
  const auto in = make_inputs(5000, GENERATE(false, true));
  const auto a = run_gpu(in), b = run_gpu(in);
  REQUIRE(test::bit_identical(a.h, b.h));
  REQUIRE(test::bit_identical(a.dg, b.dg));
  REQUIRE(test::bit_identical(a.du, b.du));
}

// GeGLU's gate activation is the GELU kernels' own function (shaders/gelu.glsl): with u = 1,
// h is the GELU forward's output bit for bit.
TEST_CASE("geglu with a unit up projection gives the GELU kernel's bits") {
  auto in = make_inputs(3 * 23 * 88, true);
  std::fill(in.u.begin(), in.u.end(), 1.0f);
  const auto r = run_gpu(in);
  const auto n = uint32_t(in.g.size());
  Buffer x = test::upload_buffer(in.g, "x"), y = test::garbage_buffer<float>(n, "y");
  DeviceQuirks q = test::device().plan().quirks;
  q.texel_fetch_beats_storage_loads = false;
  test::run_once({kernels::gelu_forward(q, n, x.whole(), y.whole())});
  REQUIRE(test::bit_identical(r.h, test::read<float>(y, n)));
}

}  // namespace

// matmul backward (dinp, dW, dbias): the reference backward against finite differences of the
// reference forward; the GPU kernels against the reference at awkward sizes and both weight
// layouts; bit-identical reruns; exact accumulation onto existing gradients.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "runtime/kernels/matmul_backward.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/matmul_backward.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

ref::WeightLayout ref_layout(kernels::WeightLayout l) {
  return l == kernels::WeightLayout::in_out ? ref::WeightLayout::in_out : ref::WeightLayout::out_in;
}

// loss = Σ out ⊙ r, so dout = r.
double weighted_loss(const std::vector<double>& inp, const std::vector<double>& w,
                     const std::vector<double>& bias, const std::vector<double>& r, std::size_t M,
                     std::size_t N, std::size_t K, ref::WeightLayout layout) {
  std::vector<double> out;
  ref::matmul_forward(out, inp, w, bias, M, N, K, layout);
  double loss = 0;
  for (std::size_t i = 0; i < out.size(); ++i) loss += out[i] * r[i];
  return loss;
}

// Central differences of `loss` with respect to every element of `x`.
struct Grads {
  std::vector<float> dinp, dw, dbias;
};

struct Problem {
  uint32_t M, N, K;
  kernels::WeightLayout layout;
  std::vector<float> dout, inp, w;
  Problem(uint32_t m, uint32_t n, uint32_t k, kernels::WeightLayout l)
      : M(m),
        N(n),
        K(k),
        layout(l),
        dout(test::random_floats(size_t(m) * n, 11 + m)),
        inp(test::random_floats(size_t(m) * k, 12 + k)),
        w(test::random_floats(size_t(k) * n, 13 + n)) {}
};

// The builders pick tile shapes from DeviceQuirks; every variant runs on any device, so the
// tests run each one here: CPU storage-buffer tiles, GPU tiles, and the CPU texel-fetch kernels
// (matmul_texels.h; they fall back to the CPU tiles where a shape rules them out).
std::vector<DeviceQuirks> variants() {
  DeviceQuirks cpu = test::device().plan().quirks, gpu = cpu;
  cpu.barriers_are_expensive = true;
  gpu.barriers_are_expensive = false;
  cpu.texel_fetch_beats_storage_loads = gpu.texel_fetch_beats_storage_loads = false;
  DeviceQuirks texels = cpu;
  texels.texel_fetch_beats_storage_loads = true;
  return {cpu, gpu, texels};
}

// Runs the three kernels once into buffers pre-filled with `init` (garbage when empty).
Grads run_gpu(const Problem& p, kernels::GradWrite mode, const Grads& init = {},
              const DeviceQuirks& q = test::device().plan().quirks) {
  Buffer d_dout = test::upload_buffer(p.dout, "dout");
  Buffer d_inp = test::upload_buffer(p.inp, "inp");
  Buffer d_w = test::upload_buffer(p.w, "w");
  const std::size_t nk = size_t(p.M) * p.K, nw = size_t(p.K) * p.N;
  Buffer d_dinp = init.dinp.empty() ? test::garbage_buffer<float>(nk, "dinp")
                                    : test::upload_buffer(init.dinp, "dinp");
  Buffer d_dw =
      init.dw.empty() ? test::garbage_buffer<float>(nw, "dw") : test::upload_buffer(init.dw, "dw");
  Buffer d_db = init.dbias.empty() ? test::garbage_buffer<float>(p.N, "dbias")
                                   : test::upload_buffer(init.dbias, "dbias");
  kernels::MatmulShape s{p.M, p.N, p.K, p.layout};
  test::run_once({
      kernels::matmul_backward_input(q, s, d_dout.whole(), d_w.whole(), d_dinp.whole(), mode),
      kernels::matmul_backward_weight(q, s, d_dout.whole(), d_inp.whole(), d_dw.whole(), mode),
      kernels::matmul_backward_bias(q, s, d_dout.whole(), d_db.whole(), mode),
  });
  return {test::read<float>(d_dinp, nk), test::read<float>(d_dw, nw), test::read<float>(d_db, p.N)};
}

std::vector<float> absolute(std::vector<float> v) {
  for (auto& x : v) x = std::abs(x);
  return v;
}

// Float sums of L terms err by at most ~L·2⁻²⁴·Σ|terms|, and by ~√L·2⁻²⁴·Σ|terms| in practice,
// so the bound is relative to Σ|terms| (the reference run on absolute values), not to the
// possibly cancelling result: |gpu − ref| ≤ 1e-5 · (|ref| + Σ|terms|).
void require_close(const std::vector<float>& gpu, const std::vector<float>& ref,
                   const std::vector<float>& magnitude, const char* what) {
  REQUIRE(gpu.size() == ref.size());
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    INFO(what << "[" << i << "] gpu " << gpu[i] << " ref " << ref[i]);
    REQUIRE(std::abs(gpu[i] - ref[i]) <= 1e-5f * (std::abs(ref[i]) + magnitude[i]));
  }
}

void check_against_reference(uint32_t M, uint32_t N, uint32_t K, kernels::WeightLayout layout) {
  Problem p(M, N, K, layout);
  Grads ref, mag;
  ref::matmul_backward(ref.dinp, ref.dw, ref.dbias, p.dout, p.inp, p.w, M, N, K,
                       ref_layout(layout));
  ref::matmul_backward(mag.dinp, mag.dw, mag.dbias, absolute(p.dout), absolute(p.inp),
                       absolute(p.w), M, N, K, ref_layout(layout));
  for (const DeviceQuirks& q : variants()) {
    INFO("barriers_are_expensive " << q.barriers_are_expensive << " texels "
                                   << q.texel_fetch_beats_storage_loads);
    Grads gpu = run_gpu(p, kernels::GradWrite::overwrite, {}, q);
    require_close(gpu.dinp, ref.dinp, mag.dinp, "dinp");
    require_close(gpu.dw, ref.dw, mag.dw, "dw");
    require_close(gpu.dbias, ref.dbias, mag.dbias, "dbias");
  }
}

}  // namespace

TEST_CASE("matmul reference backward agrees with finite differences in double") {
  const std::size_t M = 5, N = 7, K = 3;
  for (auto layout : {ref::WeightLayout::in_out, ref::WeightLayout::out_in}) {
    DYNAMIC_SECTION("layout " << int(layout)) {
      auto inp = test::random_doubles(M * K, 21);
      auto w = test::random_doubles(K * N, 22);
      auto bias = test::random_doubles(N, 23);
      auto r = test::random_doubles(M * N, 24);
      std::vector<double> dinp, dw, dbias;
      ref::matmul_backward(dinp, dw, dbias, r, inp, w, M, N, K, layout);
      auto loss = [&] { return weighted_loss(inp, w, bias, r, M, N, K, layout); };
      test::require_matches_finite_differences(loss, inp, dinp, "dinp");
      test::require_matches_finite_differences(loss, w, dw, "dw");
      test::require_matches_finite_differences(loss, bias, dbias, "dbias");
    }
  }
}

TEST_CASE("matmul backward matches the reference at sizes that are not tile multiples") {
  for (uint32_t n : {1u, 7u, 33u, 129u}) {
    for (auto layout : {kernels::WeightLayout::in_out, kernels::WeightLayout::out_in}) {
      DYNAMIC_SECTION("M=N=K=" << n << " layout " << int(layout)) {
        check_against_reference(n, n, n, layout);
      }
    }
  }
}

TEST_CASE("matmul backward at GPT-shaped rectangles") {
  using L = kernels::WeightLayout;
  SECTION("c_attn, B=3 T=23 C=48") {
    check_against_reference(69, 144, 48, L::in_out);
  }
  SECTION("mlp c_proj") {
    check_against_reference(69, 48, 192, L::in_out);
  }
  SECTION("tied head, vocab 101") {
    check_against_reference(69, 101, 48, L::out_in);
  }
  SECTION("one row, long K") {
    check_against_reference(1, 7, 300, L::in_out);
  }
  SECTION("long M") {
    check_against_reference(517, 5, 3, L::out_in);
  }
}

TEST_CASE("matmul backward is bit-identical across runs") {
  for (auto layout : {kernels::WeightLayout::in_out, kernels::WeightLayout::out_in}) {
    Problem p(129, 77, 200, layout);
    Grads a = run_gpu(p, kernels::GradWrite::overwrite);
    Grads b = run_gpu(p, kernels::GradWrite::overwrite);
    INFO("layout " << int(layout));
    REQUIRE(a.dinp == b.dinp);
    REQUIRE(a.dw == b.dw);
    REQUIRE(a.dbias == b.dbias);
  }
}

TEST_CASE("matmul backward with accumulate adds exactly onto the existing gradient") {
  for (auto layout : {kernels::WeightLayout::in_out, kernels::WeightLayout::out_in}) {
    Problem p(33, 23, 17, layout);
    Grads fresh = run_gpu(p, kernels::GradWrite::overwrite);
    INFO("layout " << int(layout));
    Grads before{test::random_floats(fresh.dinp.size(), 31),
                 test::random_floats(fresh.dw.size(), 32),
                 test::random_floats(fresh.dbias.size(), 33)};
    Grads after = run_gpu(p, kernels::GradWrite::accumulate, before);
    for (std::size_t i = 0; i < fresh.dinp.size(); ++i)
      REQUIRE(after.dinp[i] == before.dinp[i] + fresh.dinp[i]);
    for (std::size_t i = 0; i < fresh.dw.size(); ++i)
      REQUIRE(after.dw[i] == before.dw[i] + fresh.dw[i]);
    for (std::size_t i = 0; i < fresh.dbias.size(); ++i)
      REQUIRE(after.dbias[i] == before.dbias[i] + fresh.dbias[i]);
  }
}

// Throughput at GPT-2 small's MLP c_fc (B=4, T=64: M=256, K=768, N=3072). Hidden: run with
// `remat_matmul_backward_test [.bench]`.
TEST_CASE("matmul backward throughput at GPT-2 small c_fc", "[.bench]") {
  const uint32_t M = 256, K = 768, N = 3072;
  const auto& q = test::device().plan().quirks;
  Buffer dout = test::upload_buffer(test::random_floats(size_t(M) * N, 1), "dout");
  Buffer inp = test::upload_buffer(test::random_floats(size_t(M) * K, 2), "inp");
  Buffer w = test::upload_buffer(test::random_floats(size_t(K) * N, 3), "w");
  Buffer dinp = test::garbage_buffer<float>(size_t(M) * K, "dinp");
  Buffer dw = test::garbage_buffer<float>(size_t(K) * N, "dw");
  Buffer db = test::garbage_buffer<float>(N, "dbias");
  Buffer out = test::garbage_buffer<float>(size_t(M) * N, "out");
  for (auto layout : {kernels::WeightLayout::in_out, kernels::WeightLayout::out_in}) {
    kernels::MatmulShape s{M, N, K, layout};
    const auto mode = kernels::GradWrite::overwrite;
    Executor ex(test::kernels(),
                {kernels::matmul_forward(q, s, inp.whole(), w.whole(), db.whole(), out.whole()),
                 kernels::matmul_backward_input(q, s, dout.whole(), w.whole(), dinp.whole(), mode),
                 kernels::matmul_backward_weight(q, s, dout.whole(), inp.whole(), dw.whole(), mode),
                 kernels::matmul_backward_bias(q, s, dout.whole(), db.whole(), mode)},
                ExecutorOptions{.timestamps = true});
    ex.run();  // warm-up
    ex.run();
    const auto ms = ex.dispatch_ms();
    const double flops = 2.0 * M * N * K;
    std::printf(
        "layout %d: forward %.1f ms %.2f GFLOP/s | dinp %.1f ms %.2f GFLOP/s | dW %.1f ms "
        "%.2f GFLOP/s | dbias %.2f ms %.2f GB/s\n",
        int(layout), ms[0], flops / ms[0] * 1e-6, ms[1], flops / ms[1] * 1e-6, ms[2],
        flops / ms[2] * 1e-6, ms[3], 4.0 * M * N / ms[3] * 1e-6);
  }
}

TEST_CASE("matmul_backward_input's vec4 variant gives the scalar kernel's bits") {
  // The CPU tiles take the vec4 kernel where W is [K,N] with N % 4 == 0; the GPU tiles take the
  // scalar one. Both sum over n in the same order, so dinp must match bit for bit.
  const auto vs = variants();
  Buffer b = test::garbage_buffer<float>(16, "b");
  const kernels::MatmulShape s{69, 144, 48, kernels::WeightLayout::in_out};
  REQUIRE(kernels::matmul_backward_input(vs[0], s, b.whole(), b.whole(), b.whole(),
                                         kernels::GradWrite::overwrite)
              .kernel == KernelId::matmul_backward_input_vec4);
  REQUIRE(kernels::matmul_backward_input(vs[1], s, b.whole(), b.whole(), b.whole(),
                                         kernels::GradWrite::overwrite)
              .kernel == KernelId::matmul_backward_input);
  Problem p(69, 144, 48, kernels::WeightLayout::in_out);
  CHECK(run_gpu(p, kernels::GradWrite::overwrite, {}, vs[0]).dinp ==
        run_gpu(p, kernels::GradWrite::overwrite, {}, vs[1]).dinp);
}

TEST_CASE("matmul_backward_weight's vec4 variant gives the scalar kernel's bits") {
  const auto vs = variants();
  Buffer b = test::garbage_buffer<float>(16, "b");
  for (const auto& [M, N, K] :
       {std::tuple{69u, 144u, 48u}, std::tuple{5u, 12u, 20u}, std::tuple{130u, 8u, 4u}}) {
    INFO("M=" << M << " N=" << N << " K=" << K);
    const kernels::MatmulShape s{M, N, K, kernels::WeightLayout::in_out};
    REQUIRE(kernels::matmul_backward_weight(vs[0], s, b.whole(), b.whole(), b.whole(),
                                            kernels::GradWrite::overwrite)
                .kernel == KernelId::matmul_backward_weight_vec4);
    Problem p(M, N, K, kernels::WeightLayout::in_out);
    const Grads init{{}, test::random_floats(size_t(K) * N, 5), {}};
    for (auto mode : {kernels::GradWrite::overwrite, kernels::GradWrite::accumulate}) {
      const Grads cpu = run_gpu(p, mode, init, vs[0]), gpu = run_gpu(p, mode, init, vs[1]);
      CHECK(cpu.dw == gpu.dw);
    }
  }
}

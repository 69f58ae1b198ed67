// Causal multi-head attention: the naive reference (full T x T matrix) checked by finite
// differences; the flash-style GPU forward and backward against it at T = 1, 23, 64, 256 and head
// sizes 16 to 128; bit-identical reruns; exact accumulation onto an existing dqkv.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "runtime/kernels/attention.h"
#include "tests/kernels/attention_checks.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/attention.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

using Shape = kernels::AttentionShape;

std::size_t qkv_size(const Shape& s) {
  return std::size_t(s.B) * s.T * 3 * s.C;
}
std::size_t out_size(const Shape& s) {
  return std::size_t(s.B) * s.T * s.C;
}
std::size_t lse_size(const Shape& s) {
  return std::size_t(s.B) * s.NH * s.T;
}

struct Forward {
  std::vector<float> out, lse;
};

Forward gpu_forward(const Shape& s, const std::vector<float>& qkv, const DeviceQuirks& q) {
  Buffer d_qkv = test::upload_buffer(qkv, "qkv");
  Buffer d_out = test::garbage_buffer<float>(out_size(s), "out");
  Buffer d_lse = test::garbage_buffer<float>(lse_size(s), "lse");
  test::run_once({kernels::attention_forward(q, s, d_qkv.whole(), d_out.whole(), d_lse.whole())});
  return {test::read<float>(d_out, out_size(s)), test::read<float>(d_lse, lse_size(s))};
}

std::vector<float> gpu_backward(const Shape& s, const std::vector<float>& dout,
                                const std::vector<float>& qkv, const Forward& f,
                                const DeviceQuirks& q, kernels::GradWrite mode,
                                const std::vector<float>& init = {}) {
  Buffer d_dout = test::upload_buffer(dout, "dout");
  Buffer d_qkv = test::upload_buffer(qkv, "qkv");
  Buffer d_out = test::upload_buffer(f.out, "out");
  Buffer d_lse = test::upload_buffer(f.lse, "lse");
  Buffer d_dqkv = init.empty() ? test::garbage_buffer<float>(qkv_size(s), "dqkv")
                               : test::upload_buffer(init, "dqkv");
  test::run_once({kernels::attention_backward(q, s, d_dout.whole(), d_qkv.whole(), d_out.whole(),
                                              d_lse.whole(), d_dqkv.whole(), mode)});
  return test::read<float>(d_dqkv, qkv_size(s));
}

struct Case {
  Shape s;
  std::vector<float> qkv, dout;
  Forward ref;
  explicit Case(Shape shape)
      : s(shape),
        qkv(test::random_floats(qkv_size(shape), 100 + shape.T + shape.C)),
        dout(test::random_floats(out_size(shape), 200 + shape.T)) {
    ref::attention_forward(ref.out, ref.lse, qkv, s.B, s.T, s.C, s.NH);
  }
};

void check_forward(const Shape& s) {
  Case c(s);
  // out_t is a convex combination of the v_s: its float error scales with Σ_s p_s |v_s|, the
  // reference run on |v|. lse_t ≈ max score + log(count): its error scales with |lse| + 1.
  std::vector<float> abs_v = c.qkv;
  for (std::size_t i = 0; i < abs_v.size(); ++i)
    if ((i % (3 * s.C)) >= 2 * s.C) abs_v[i] = std::abs(abs_v[i]);
  std::vector<float> mag_out, unused;
  ref::attention_forward(mag_out, unused, abs_v, s.B, s.T, s.C, s.NH);
  const std::vector<double> out_mag(mag_out.begin(), mag_out.end());
  const std::vector<double> lse_mag(c.ref.lse.size(), 1.0);
  for (const DeviceQuirks& q : test::attention_variants()) {
    INFO("barriers_are_expensive " << q.barriers_are_expensive << " texels "
                                   << q.texel_fetch_beats_storage_loads);
    const Forward g = gpu_forward(s, c.qkv, q);
    const double e1 = test::require_close_to(g.out, c.ref.out, out_mag, 1e-5, "out");
    const double e2 = test::require_close_to(g.lse, c.ref.lse, lse_mag, 1e-5, "lse");
    std::printf("fwd T=%u C=%u NH=%u: out %.2e lse %.2e\n", s.T, s.C, s.NH, e1, e2);
  }
}

void check_backward(const Shape& s) {
  Case c(s);
  std::vector<float> want;
  ref::attention_backward(want, c.dout, c.qkv, s.B, s.T, s.C, s.NH);
  // dq, dk, dv are sums of T products whose signs cancel; bound the error against the largest
  // gradient in the tensor (a norm-wise criterion) plus the element itself.
  const std::vector<double> mag(want.size(), test::max_abs(want));
  for (const DeviceQuirks& q : test::attention_variants()) {
    INFO("barriers_are_expensive " << q.barriers_are_expensive << " texels "
                                   << q.texel_fetch_beats_storage_loads);
    const auto g = gpu_backward(s, c.dout, c.qkv, c.ref, q, kernels::GradWrite::overwrite);
    const double e = test::require_close_to(g, want, mag, 1e-5, "dqkv");
    std::printf("bwd T=%u C=%u NH=%u: dqkv %.2e\n", s.T, s.C, s.NH, e);
  }
}

// The shapes of the GPU tests: GPT-awkward (hs = 16, T = 23), single position, round T, long T
// with few heads, and the largest head size GPT-2 variants use (128, at T = 33).
const Shape kShapes[] = {
    {3, 23, 48, 3}, {2, 1, 48, 3}, {2, 64, 96, 2}, {1, 256, 128, 2}, {1, 33, 256, 2}};

}  // namespace

TEST_CASE("attention reference: a single position attends to itself") {
  const Shape s{2, 1, 12, 3};
  const auto qkv = test::random_doubles(qkv_size(s), 7);
  std::vector<double> out, lse;
  ref::attention_forward(out, lse, qkv, s.B, s.T, s.C, s.NH);
  const std::size_t hs = s.C / s.NH;
  for (std::size_t b = 0; b < s.B; ++b)
    for (std::size_t h = 0; h < s.NH; ++h) {
      double dot = 0;
      for (std::size_t d = 0; d < hs; ++d)
        dot += qkv[b * 3 * s.C + h * hs + d] * qkv[b * 3 * s.C + s.C + h * hs + d];
      REQUIRE(lse[b * s.NH + h] == Approx(dot / std::sqrt(double(hs))).epsilon(1e-12));
      for (std::size_t d = 0; d < hs; ++d)
        REQUIRE(out[b * s.C + h * hs + d] == qkv[b * 3 * s.C + 2 * s.C + h * hs + d]);
    }
}

TEST_CASE("attention reference backward agrees with finite differences in double") {
  for (Shape s : {Shape{2, 5, 6, 2}, Shape{1, 7, 12, 3}}) {
    DYNAMIC_SECTION("B=" << s.B << " T=" << s.T << " C=" << s.C << " NH=" << s.NH) {
      auto qkv = test::random_doubles(qkv_size(s), 31 + s.T);
      const auto r = test::random_doubles(out_size(s), 32 + s.T);  // loss = Σ out ⊙ r
      std::vector<double> dqkv;
      ref::attention_backward(dqkv, r, qkv, s.B, s.T, s.C, s.NH);
      auto loss = [&] {
        std::vector<double> out, lse;
        ref::attention_forward(out, lse, qkv, s.B, s.T, s.C, s.NH);
        return test::weighted_sum(out, r);
      };
      test::require_matches_finite_differences(loss, qkv, dqkv, "dqkv");
    }
  }
}

TEST_CASE("attention_forward matches the naive reference") {
  for (const Shape& s : kShapes) {
    DYNAMIC_SECTION("B=" << s.B << " T=" << s.T << " C=" << s.C << " NH=" << s.NH) {
      check_forward(s);
    }
  }
}

TEST_CASE("attention_backward matches the naive reference") {
  for (const Shape& s : kShapes) {
    DYNAMIC_SECTION("B=" << s.B << " T=" << s.T << " C=" << s.C << " NH=" << s.NH) {
      check_backward(s);
    }
  }
}

TEST_CASE("attention at T = 1024 with head size 128 matches the naive reference") {
  // The longest context and the largest head the kernels must handle on lavapipe; one head and
  // the device's own variant keep it to a few seconds.
  const Shape s{1, 1024, 128, 1};
  const Case c(s);
  const auto& q = test::device().plan().quirks;
  const Forward g = gpu_forward(s, c.qkv, q);
  std::vector<float> want;
  ref::attention_backward(want, c.dout, c.qkv, s.B, s.T, s.C, s.NH);
  const auto dg = gpu_backward(s, c.dout, c.qkv, c.ref, q, kernels::GradWrite::overwrite);
  // Criteria as above, with the output's magnitude bounded by max |v| (a convex combination).
  test::require_close_to(g.out, c.ref.out, std::vector<double>(g.out.size(), 1.0), 1e-5, "out");
  test::require_close_to(g.lse, c.ref.lse, std::vector<double>(g.lse.size(), 1.0), 1e-5, "lse");
  test::require_close_to(dg, want, std::vector<double>(want.size(), test::max_abs(want)), 1e-5,
                         "dqkv");
}

TEST_CASE("attention forward and backward are bit-identical across runs") {
  const Case c(Shape{3, 23, 48, 3});
  const auto& q = test::device().plan().quirks;
  const Forward a = gpu_forward(c.s, c.qkv, q), b = gpu_forward(c.s, c.qkv, q);
  REQUIRE(a.out == b.out);
  REQUIRE(a.lse == b.lse);
  const auto da = gpu_backward(c.s, c.dout, c.qkv, a, q, kernels::GradWrite::overwrite);
  const auto db = gpu_backward(c.s, c.dout, c.qkv, a, q, kernels::GradWrite::overwrite);
  REQUIRE(da == db);
}

TEST_CASE("attention through texel views gives the storage-buffer kernels' bits") {
  const auto vs = test::attention_variants();
  const DeviceQuirks &storage = vs[0], &texels = vs[2];
  for (const Shape& s : kShapes) {
    DYNAMIC_SECTION("B=" << s.B << " T=" << s.T << " C=" << s.C << " NH=" << s.NH) {
      const Case c(s);
      REQUIRE(kernels::attention_forward(texels, s, {}, {}, {}).kernel ==
              KernelId::attention_forward_texels);
      const Forward a = gpu_forward(s, c.qkv, storage), b = gpu_forward(s, c.qkv, texels);
      REQUIRE(test::bit_identical(a.out, b.out));
      REQUIRE(test::bit_identical(a.lse, b.lse));
      for (auto mode : {kernels::GradWrite::overwrite, kernels::GradWrite::accumulate}) {
        const auto init = test::random_floats(qkv_size(s), 5);
        REQUIRE(test::bit_identical(gpu_backward(s, c.dout, c.qkv, a, storage, mode, init),
                                    gpu_backward(s, c.dout, c.qkv, a, texels, mode, init)));
      }
    }
  }
}

TEST_CASE("attention_backward with accumulate adds exactly onto the existing dqkv") {
  const Case c(Shape{3, 23, 48, 3});
  const auto& q = test::device().plan().quirks;
  const auto fresh = gpu_backward(c.s, c.dout, c.qkv, c.ref, q, kernels::GradWrite::overwrite);
  const auto before = test::random_floats(fresh.size(), 77);
  const auto after =
      gpu_backward(c.s, c.dout, c.qkv, c.ref, q, kernels::GradWrite::accumulate, before);
  for (std::size_t i = 0; i < fresh.size(); ++i) REQUIRE(after[i] == before[i] + fresh[i]);
}

TEST_CASE("attention rejects shapes it cannot compute correctly") {
  DeviceQuirks cpu = test::device().plan().quirks, gpu = cpu;
  cpu.barriers_are_expensive = true;
  cpu.max_loop_iterations = 65535;  // llvmpipe's limit
  gpu.barriers_are_expensive = false;
  gpu.max_loop_iterations = 0;
  for (const auto& q : {cpu, gpu}) {
    REQUIRE_THROWS_AS(kernels::attention_forward(q, Shape{1, 4, 50, 3}, {}, {}, {}),
                      std::invalid_argument);  // NH does not divide C
    REQUIRE_THROWS_AS(kernels::attention_forward(q, Shape{1, 4, 1024, 2}, {}, {}, {}),
                      std::invalid_argument);  // head size 512
    REQUIRE_THROWS_AS(kernels::attention_backward(q, Shape{1, 4, 12, 2}, {}, {}, {}, {}, {},
                                                  kernels::GradWrite::overwrite),
                      std::invalid_argument);  // head size 6, not a multiple of 4
  }
  // Past the CPU driver's loop-iteration limit only there, for the storage-buffer kernels (the
  // texel kernels unroll their head loops and count only their key loops:
  // attention_window_test.cpp).
  cpu.texel_fetch_beats_storage_loads = false;
  REQUIRE_THROWS_AS(kernels::attention_forward(cpu, Shape{1, 4096, 128, 1}, {}, {}, {}),
                    std::invalid_argument);
  REQUIRE_NOTHROW(kernels::attention_forward(gpu, Shape{1, 4096, 128, 1}, {}, {}, {}));
}

// Throughput at GPT-2 small (B=4, T=64, C=768, NH=12). Hidden: run with
// `remat_attention_test [.bench]`. FLOPs counted as FlashAttention-2 does: 4·hs per causal
// (query, key) pair forward (q·k and p·v), 2.5 times that backward.
TEST_CASE("attention throughput at GPT-2 small", "[.bench]") {
  const Shape s{4, 64, 768, 12};
  const auto& q = test::device().plan().quirks;
  Buffer qkv = test::upload_buffer(test::random_floats(qkv_size(s), 1), "qkv");
  Buffer dout = test::upload_buffer(test::random_floats(out_size(s), 2), "dout");
  Buffer out = test::garbage_buffer<float>(out_size(s), "out");
  Buffer lse = test::garbage_buffer<float>(lse_size(s), "lse");
  Buffer dqkv = test::garbage_buffer<float>(qkv_size(s), "dqkv");
  Executor ex(
      test::kernels(),
      {kernels::attention_forward(q, s, qkv.whole(), out.whole(), lse.whole()),
       kernels::attention_backward(q, s, dout.whole(), qkv.whole(), out.whole(), lse.whole(),
                                   dqkv.whole(), kernels::GradWrite::overwrite)},
      ExecutorOptions{.timestamps = true});
  ex.run();
  ex.run();
  const auto ms = ex.dispatch_ms();
  const double pairs = double(s.B) * s.NH * s.T * (s.T + 1) / 2;
  const double fwd = pairs * 4 * (s.C / s.NH);
  std::printf("attention forward %.2f ms %.2f GFLOP/s | backward %.2f ms %.2f GFLOP/s\n", ms[0],
              fwd / ms[0] * 1e-6, ms[1], 2.5 * fwd / ms[1] * 1e-6);
}

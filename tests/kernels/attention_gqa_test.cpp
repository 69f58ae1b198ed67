// Grouped-query attention (separate q, k, v; NH query heads sharing KV key/value heads): the
// naive reference against multi-head attention on repeated key/value heads and against finite
// differences; the GPU forward and backward against it at awkward shapes (KV = 1, KV = NH, T = 1,
// T = 256, SmolLM2's 9 heads over 3); KV = NH bit-identical to the fused multi-head kernels;
// exact accumulation, bit-identical reruns and variants; the refusals.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "runtime/kernels/attention.h"
#include "tests/kernels/attention_checks.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/attention.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

using Shape = kernels::AttentionShape;
using kernels::GradWrite;

Shape gqa(uint32_t B, uint32_t T, uint32_t NH, uint32_t KV, uint32_t D) {
  return {B, T, NH * D, NH, KV};
}
ref::GqaDims dims(const Shape& s) {
  return {s.B, s.T, s.NH, s.KV, s.C / s.NH};
}
std::size_t q_size(const Shape& s) {
  return std::size_t(s.B) * s.T * s.C;
}
std::size_t kv_size(const Shape& s) {
  return std::size_t(s.B) * s.T * s.KV * (s.C / s.NH);
}
std::size_t lse_size(const Shape& s) {
  return std::size_t(s.B) * s.NH * s.T;
}

template <class T>
struct Qkv {
  std::vector<T> q, k, v;
};
struct Forward {
  std::vector<float> out, lse;
};
using Grads = Qkv<float>;

// Random inputs, and the reference forward the backward tests start from.
struct Case {
  Shape s;
  Qkv<float> in;
  std::vector<float> dout;
  Forward ref;
  explicit Case(Shape shape) : s(shape) {
    const uint64_t seed = 1000 + 37 * s.T + 5 * s.NH + s.KV;
    in = {test::random_floats(q_size(s), seed), test::random_floats(kv_size(s), seed + 1),
          test::random_floats(kv_size(s), seed + 2)};
    dout = test::random_floats(q_size(s), seed + 3);
    ref::gqa_attention_forward(ref.out, ref.lse, in.q, in.k, in.v, dims(s));
  }
};

Forward gpu_forward(const Shape& s, const Qkv<float>& in, const DeviceQuirks& quirks) {
  Buffer q = test::upload_buffer(in.q, "q"), k = test::upload_buffer(in.k, "k"),
         v = test::upload_buffer(in.v, "v");
  Buffer out = test::garbage_buffer<float>(q_size(s), "out");
  Buffer lse = test::garbage_buffer<float>(lse_size(s), "lse");
  test::run_once({kernels::gqa_attention_forward(quirks, s, q.whole(), k.whole(), v.whole(),
                                                 out.whole(), lse.whole())});
  return {test::read<float>(out, q_size(s)), test::read<float>(lse, lse_size(s))};
}

// Overwrites gradients pre-filled with NaN garbage, or adds onto `init`.
Grads gpu_backward(const Case& c, const Forward& f, const DeviceQuirks& quirks, GradWrite mode,
                   const Grads* init = nullptr) {
  const Shape& s = c.s;
  Buffer dout = test::upload_buffer(c.dout, "dout"), q = test::upload_buffer(c.in.q, "q"),
         k = test::upload_buffer(c.in.k, "k"), v = test::upload_buffer(c.in.v, "v"),
         out = test::upload_buffer(f.out, "out"), lse = test::upload_buffer(f.lse, "lse");
  auto grad = [&](const std::vector<float>* x, std::size_t n, const char* name) {
    return x ? test::upload_buffer(*x, name) : test::garbage_buffer<float>(n, name);
  };
  Buffer dq = grad(init ? &init->q : nullptr, q_size(s), "dq");
  Buffer dk = grad(init ? &init->k : nullptr, kv_size(s), "dk");
  Buffer dv = grad(init ? &init->v : nullptr, kv_size(s), "dv");
  test::run_once({kernels::gqa_attention_backward(quirks, s, dout.whole(), q.whole(), k.whole(),
                                                  v.whole(), out.whole(), lse.whole(), dq.whole(),
                                                  dk.whole(), dv.whole(), mode)});
  return {test::read<float>(dq, q_size(s)), test::read<float>(dk, kv_size(s)),
          test::read<float>(dv, kv_size(s))};
}

// The awkward shapes (B, T, NH, KV, D): odd T and head size 8; SmolLM2's 9 query heads over 3
// key/value heads of 64; multi-query (KV = 1); multi-head (KV = NH); a single position; T = 256.
const Shape kShapes[] = {gqa(3, 23, 6, 2, 8),  gqa(2, 33, 9, 3, 64), gqa(2, 23, 4, 1, 16),
                         gqa(2, 23, 3, 3, 16), gqa(2, 1, 6, 2, 8),   gqa(1, 256, 6, 2, 32)};

std::string name(const Shape& s) {
  return "B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " NH=" + std::to_string(s.NH) +
         " KV=" + std::to_string(s.KV) + " D=" + std::to_string(s.C / s.NH);
}

}  // namespace

TEST_CASE("gqa reference equals multi-head attention on repeated key/value heads") {
  const Shape s = gqa(2, 7, 6, 2, 4);
  const auto n = dims(s);
  const std::size_t D = n.D, G = n.NH / n.KV, C = s.C;
  const Qkv<double> in{test::random_doubles(q_size(s), 1), test::random_doubles(kv_size(s), 2),
                       test::random_doubles(kv_size(s), 3)};
  const auto dout = test::random_doubles(q_size(s), 4);
  // repeat_kv: query head h sees key/value head h / G, in a fused qkv for the multi-head code.
  std::vector<double> qkv(n.B * n.T * 3 * C);
  for (std::size_t bt = 0; bt < n.B * n.T; ++bt)
    for (std::size_t h = 0; h < n.NH; ++h)
      for (std::size_t d = 0; d < D; ++d) {
        const std::size_t kv = bt * n.KV * D + (h / G) * D + d;
        qkv[bt * 3 * C + h * D + d] = in.q[bt * C + h * D + d];
        qkv[bt * 3 * C + C + h * D + d] = in.k[kv];
        qkv[bt * 3 * C + 2 * C + h * D + d] = in.v[kv];
      }
  std::vector<double> out, lse, mha_out, mha_lse;
  ref::gqa_attention_forward(out, lse, in.q, in.k, in.v, n);
  ref::attention_forward(mha_out, mha_lse, qkv, n.B, n.T, C, n.NH);
  REQUIRE(out == mha_out);  // the same sums in the same order
  REQUIRE(lse == mha_lse);
  // A key/value head's gradient is the sum over its group's repeated copies.
  Qkv<double> g;
  std::vector<double> dqkv;
  ref::gqa_attention_backward(g.q, g.k, g.v, dout, in.q, in.k, in.v, n);
  ref::attention_backward(dqkv, dout, qkv, n.B, n.T, C, n.NH);
  for (std::size_t bt = 0; bt < n.B * n.T; ++bt)
    for (std::size_t h = 0; h < n.NH; ++h)
      for (std::size_t d = 0; d < D; ++d)
        REQUIRE(g.q[bt * C + h * D + d] == Approx(dqkv[bt * 3 * C + h * D + d]).margin(1e-14));
  for (std::size_t bt = 0; bt < n.B * n.T; ++bt)
    for (std::size_t kv = 0; kv < n.KV; ++kv)
      for (std::size_t d = 0; d < D; ++d) {
        double dk = 0, dv = 0;
        for (std::size_t h = kv * G; h < (kv + 1) * G; ++h) {
          dk += dqkv[bt * 3 * C + C + h * D + d];
          dv += dqkv[bt * 3 * C + 2 * C + h * D + d];
        }
        REQUIRE(g.k[bt * n.KV * D + kv * D + d] == Approx(dk).margin(1e-14));
        REQUIRE(g.v[bt * n.KV * D + kv * D + d] == Approx(dv).margin(1e-14));
      }
}

TEST_CASE("gqa reference backward agrees with finite differences in double") {
  for (Shape s : {gqa(2, 5, 4, 2, 3), gqa(1, 6, 6, 3, 2), gqa(2, 4, 3, 1, 4)}) {
    DYNAMIC_SECTION(name(s)) {
      const auto n = dims(s);
      Qkv<double> in{test::random_doubles(q_size(s), 41 + s.T),
                     test::random_doubles(kv_size(s), 42 + s.T),
                     test::random_doubles(kv_size(s), 43 + s.T)};
      const auto r = test::random_doubles(q_size(s), 44 + s.T);  // loss = Σ out ⊙ r
      Qkv<double> g;
      ref::gqa_attention_backward(g.q, g.k, g.v, r, in.q, in.k, in.v, n);
      auto loss = [&] {
        std::vector<double> out, lse;
        ref::gqa_attention_forward(out, lse, in.q, in.k, in.v, n);
        return test::weighted_sum(out, r);
      };
      test::require_matches_finite_differences(loss, in.q, g.q, "dq");
      test::require_matches_finite_differences(loss, in.k, g.k, "dk");
      test::require_matches_finite_differences(loss, in.v, g.v, "dv");
    }
  }
}

TEST_CASE("gqa_attention_forward matches the naive reference") {
  for (const Shape& s : kShapes) {
    DYNAMIC_SECTION(name(s)) {
      const Case c(s);
      // out_t is a convex combination of the v_s: its float error scales with Σ_s p_s |v_s|, the
      // reference run on |v|. lse_t ≈ max score + log(count): its error scales with |lse| + 1.
      std::vector<float> abs_v = c.in.v, mag_out, unused;
      for (float& x : abs_v) x = std::abs(x);
      ref::gqa_attention_forward(mag_out, unused, c.in.q, c.in.k, abs_v, dims(s));
      const std::vector<double> out_mag(mag_out.begin(), mag_out.end());
      const std::vector<double> lse_mag(c.ref.lse.size(), 1.0);
      for (const DeviceQuirks& q : test::attention_variants()) {
        INFO("barriers_are_expensive " << q.barriers_are_expensive << " texels "
                                       << q.texel_fetch_beats_storage_loads);
        const Forward g = gpu_forward(s, c.in, q);
        const double e1 = test::require_close_to(g.out, c.ref.out, out_mag, 1e-5, "out");
        const double e2 = test::require_close_to(g.lse, c.ref.lse, lse_mag, 1e-5, "lse");
        std::printf("gqa fwd %s: out %.2e lse %.2e\n", name(s).c_str(), e1, e2);
      }
    }
  }
}

TEST_CASE("gqa attention with KV = NH gives the fused multi-head kernels' bits") {
  const Shape s = gqa(3, 23, 3, 3, 16);
  const Case c(s);
  const std::size_t C = s.C, rows = std::size_t(s.B) * s.T;
  std::vector<float> qkv(rows * 3 * C);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < C; ++i) {
      qkv[r * 3 * C + i] = c.in.q[r * C + i];
      qkv[r * 3 * C + C + i] = c.in.k[r * C + i];
      qkv[r * 3 * C + 2 * C + i] = c.in.v[r * C + i];
    }
  for (const DeviceQuirks& q : test::attention_variants()) {
    INFO("barriers_are_expensive " << q.barriers_are_expensive << " texels "
                                   << q.texel_fetch_beats_storage_loads);
    Buffer d_qkv = test::upload_buffer(qkv, "qkv"), dout = test::upload_buffer(c.dout, "dout");
    Buffer out = test::garbage_buffer<float>(q_size(s), "out");
    Buffer lse = test::garbage_buffer<float>(lse_size(s), "lse");
    Buffer dqkv = test::garbage_buffer<float>(qkv.size(), "dqkv");
    test::run_once({kernels::attention_forward(q, s, d_qkv.whole(), out.whole(), lse.whole()),
                    kernels::attention_backward(q, s, dout.whole(), d_qkv.whole(), out.whole(),
                                                lse.whole(), dqkv.whole(), GradWrite::overwrite)});
    const Forward mha{test::read<float>(out, q_size(s)), test::read<float>(lse, lse_size(s))};
    const Forward g = gpu_forward(s, c.in, q);
    REQUIRE(test::bit_identical(g.out, mha.out));
    REQUIRE(test::bit_identical(g.lse, mha.lse));
    const Grads dg = gpu_backward(c, g, q, GradWrite::overwrite);
    const auto fused = test::read<float>(dqkv, qkv.size());
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t i = 0; i < C; ++i) {
        REQUIRE(std::bit_cast<uint32_t>(dg.q[r * C + i]) ==
                std::bit_cast<uint32_t>(fused[r * 3 * C + i]));
        REQUIRE(std::bit_cast<uint32_t>(dg.k[r * C + i]) ==
                std::bit_cast<uint32_t>(fused[r * 3 * C + C + i]));
        REQUIRE(std::bit_cast<uint32_t>(dg.v[r * C + i]) ==
                std::bit_cast<uint32_t>(fused[r * 3 * C + 2 * C + i]));
      }
  }
}

TEST_CASE("gqa attention rejects shapes it cannot compute correctly") {
  const auto vs = test::attention_variants();
  const DeviceQuirks &cpu = vs[0], &gpu = vs[1];
  for (const auto& q : {cpu, gpu}) {
    // 4 key/value heads do not divide 6 query heads; 8 exceed them.
    REQUIRE_THROWS_AS(kernels::gqa_attention_forward(q, gqa(1, 4, 6, 4, 8), {}, {}, {}, {}, {}),
                      std::invalid_argument);
    REQUIRE_THROWS_AS(kernels::gqa_attention_backward(q, gqa(1, 4, 4, 8, 8), {}, {}, {}, {}, {}, {},
                                                      {}, {}, {}, GradWrite::overwrite),
                      std::invalid_argument);
    REQUIRE_THROWS_AS(kernels::gqa_attention_forward(q, gqa(1, 4, 2, 1, 6), {}, {}, {}, {}, {}),
                      std::invalid_argument);  // head size 6, not a multiple of 4
    // A fused qkv holds NH key/value heads.
    REQUIRE_THROWS_AS(kernels::attention_forward(q, gqa(1, 4, 6, 2, 8), {}, {}, {}),
                      std::invalid_argument);
    REQUIRE_NOTHROW(kernels::attention_forward(q, gqa(1, 4, 6, 6, 8), {}, {}, {}));
    REQUIRE_NOTHROW(kernels::gqa_attention_forward(q, gqa(1, 4, 6, 0, 8), {}, {}, {}, {}, {}));
  }
  // On the CPU driver a dk/dv row loops over its group's query heads: T = 1024 at head size 128
  // fits one head's loops (the multi-head limit), not two.
  const Shape pair = gqa(1, 1024, 2, 1, 128);
  REQUIRE_NOTHROW(kernels::gqa_attention_forward(cpu, pair, {}, {}, {}, {}, {}));
  REQUIRE_THROWS_AS(kernels::gqa_attention_backward(cpu, pair, {}, {}, {}, {}, {}, {}, {}, {}, {},
                                                    GradWrite::overwrite),
                    std::invalid_argument);
  REQUIRE_NOTHROW(kernels::gqa_attention_backward(gpu, pair, {}, {}, {}, {}, {}, {}, {}, {}, {},
                                                  GradWrite::overwrite));
}

TEST_CASE("gqa_attention_backward matches the naive reference") {
  for (const Shape& s : kShapes) {
    DYNAMIC_SECTION(name(s)) {
      const Case c(s);
      Grads want;
      ref::gqa_attention_backward(want.q, want.k, want.v, c.dout, c.in.q, c.in.k, c.in.v, dims(s));
      // Sums of T (dq) or group * T (dk, dv) products whose signs cancel: the error is bounded
      // against the largest gradient in each tensor (norm-wise) plus the element itself.
      auto mag = [](const std::vector<float>& x) {
        return std::vector<double>(x.size(), test::max_abs(x));
      };
      for (const DeviceQuirks& q : test::attention_variants()) {
        INFO("barriers_are_expensive " << q.barriers_are_expensive << " texels "
                                       << q.texel_fetch_beats_storage_loads);
        const Grads g = gpu_backward(c, c.ref, q, GradWrite::overwrite);
        const double eq = test::require_close_to(g.q, want.q, mag(want.q), 1e-5, "dq");
        const double ek = test::require_close_to(g.k, want.k, mag(want.k), 1e-5, "dk");
        const double ev = test::require_close_to(g.v, want.v, mag(want.v), 1e-5, "dv");
        std::printf("gqa bwd %s: dq %.2e dk %.2e dv %.2e\n", name(s).c_str(), eq, ek, ev);
      }
    }
  }
}

TEST_CASE("gqa attention near the CPU driver's loop limit matches the naive reference") {
  // A dk/dv row of this shape loops 600 * 3 query rows: ~63,600 of llvmpipe's 65,535 loop
  // iterations per invocation (attention.cpp), where a miscount would silently drop keys.
  const Shape s = gqa(1, 600, 3, 1, 128);
  const Case c(s);
  const auto& q = test::device().plan().quirks;
  REQUIRE_NOTHROW(kernels::gqa_attention_backward(q, s, {}, {}, {}, {}, {}, {}, {}, {}, {},
                                                  GradWrite::overwrite));
  const Forward f = gpu_forward(s, c.in, q);
  test::require_close_to(f.out, c.ref.out, std::vector<double>(f.out.size(), 1.0), 1e-5, "out");
  test::require_close_to(f.lse, c.ref.lse, std::vector<double>(f.lse.size(), 1.0), 1e-5, "lse");
  Grads want;
  ref::gqa_attention_backward(want.q, want.k, want.v, c.dout, c.in.q, c.in.k, c.in.v, dims(s));
  const Grads g = gpu_backward(c, c.ref, q, GradWrite::overwrite);
  for (auto [got, ref, what] : {std::tuple{&g.q, &want.q, "dq"}, std::tuple{&g.k, &want.k, "dk"},
                                std::tuple{&g.v, &want.v, "dv"}}) {
    const std::vector<double> mag(ref->size(), test::max_abs(*ref));
    const double e = test::require_close_to(*got, *ref, mag, 1e-5, what);
    std::printf("gqa bwd %s: %s %.2e\n", name(s).c_str(), what, e);
  }
}

TEST_CASE("gqa attention accumulates exactly and is bit-identical across runs and variants") {
  const Case c(gqa(3, 23, 6, 2, 8));
  const auto vs = test::attention_variants();
  const Grads init{test::random_floats(q_size(c.s), 5), test::random_floats(kv_size(c.s), 6),
                   test::random_floats(kv_size(c.s), 7)};
  std::vector<Forward> fwd;
  std::vector<Grads> fresh, added;
  for (const DeviceQuirks& q : vs) {
    INFO("barriers_are_expensive " << q.barriers_are_expensive << " texels "
                                   << q.texel_fetch_beats_storage_loads);
    const Forward a = gpu_forward(c.s, c.in, q), b = gpu_forward(c.s, c.in, q);
    REQUIRE(test::bit_identical(a.out, b.out));
    REQUIRE(test::bit_identical(a.lse, b.lse));
    const Grads g1 = gpu_backward(c, a, q, GradWrite::overwrite);
    const Grads g2 = gpu_backward(c, a, q, GradWrite::overwrite);
    const Grads acc = gpu_backward(c, a, q, GradWrite::accumulate, &init);
    for (auto [x1, x2, x0, sum] :
         {std::tuple{&g1.q, &g2.q, &init.q, &acc.q}, std::tuple{&g1.k, &g2.k, &init.k, &acc.k},
          std::tuple{&g1.v, &g2.v, &init.v, &acc.v}}) {
      REQUIRE(test::bit_identical(*x1, *x2));
      for (std::size_t i = 0; i < x1->size(); ++i) REQUIRE((*sum)[i] == (*x0)[i] + (*x1)[i]);
    }
    fwd.push_back(a);
    fresh.push_back(g1);
  }
  // The texel views read the same numbers as the storage buffers (variants 0 and 2).
  REQUIRE(vs[2].texel_fetch_beats_storage_loads);
  REQUIRE(kernels::gqa_attention_backward(vs[2], c.s, {}, {}, {}, {}, {}, {}, {}, {}, {},
                                          GradWrite::overwrite)
              .kernel == KernelId::attention_backward_texels);
  REQUIRE(test::bit_identical(fwd[0].out, fwd[2].out));
  REQUIRE(test::bit_identical(fwd[0].lse, fwd[2].lse));
  REQUIRE(test::bit_identical(fresh[0].q, fresh[2].q));
  REQUIRE(test::bit_identical(fresh[0].k, fresh[2].k));
  REQUIRE(test::bit_identical(fresh[0].v, fresh[2].v));
}

// Throughput at SmolLM2-135M (B=4, T=256, 9 query heads over 3 key/value heads of 64). Hidden:
// run with `remat_attention_gqa_test [.bench]`. FLOPs counted as FlashAttention-2 does: 4·D per
// causal (query, key) pair and query head forward (q·k and p·v), 2.5 times that backward.
TEST_CASE("gqa attention throughput at SmolLM2-135M", "[.bench]") {
  const Shape s = gqa(4, 256, 9, 3, 64);
  const auto& quirks = test::device().plan().quirks;
  Buffer q = test::upload_buffer(test::random_floats(q_size(s), 1), "q");
  Buffer k = test::upload_buffer(test::random_floats(kv_size(s), 2), "k");
  Buffer v = test::upload_buffer(test::random_floats(kv_size(s), 3), "v");
  Buffer dout = test::upload_buffer(test::random_floats(q_size(s), 4), "dout");
  Buffer out = test::garbage_buffer<float>(q_size(s), "out");
  Buffer lse = test::garbage_buffer<float>(lse_size(s), "lse");
  Buffer dq = test::garbage_buffer<float>(q_size(s), "dq");
  Buffer dk = test::garbage_buffer<float>(kv_size(s), "dk");
  Buffer dv = test::garbage_buffer<float>(kv_size(s), "dv");
  Executor ex(test::kernels(),
              {kernels::gqa_attention_forward(quirks, s, q.whole(), k.whole(), v.whole(),
                                              out.whole(), lse.whole()),
               kernels::gqa_attention_backward(quirks, s, dout.whole(), q.whole(), k.whole(),
                                               v.whole(), out.whole(), lse.whole(), dq.whole(),
                                               dk.whole(), dv.whole(), GradWrite::overwrite)},
              ExecutorOptions{.timestamps = true});
  ex.run();
  ex.run();
  const auto ms = ex.dispatch_ms();
  const double pairs = double(s.B) * s.NH * s.T * (s.T + 1) / 2;
  const double fwd = pairs * 4 * (s.C / s.NH);
  std::printf("gqa attention forward %.2f ms %.2f GFLOP/s | backward %.2f ms %.2f GFLOP/s\n", ms[0],
              fwd / ms[0] * 1e-6, ms[1], 2.5 * fwd / ms[1] * 1e-6);
}

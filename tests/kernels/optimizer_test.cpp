// AdamW and the global gradient norm: AdamW against PyTorch's update worked by hand for two
// steps (including a learning-rate change through the hyper buffer without re-recording), and
// against the reference on a large tensor with clipping; the gradient norm against a double
// sum, PyTorch's clip scale, and bit-identical reruns.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "runtime/kernels/optimizer.h"
#include "tests/reference/optimizer.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

const DeviceQuirks& quirks() {
  return test::device().plan().quirks;
}

void upload_hyper(const Buffer& b, const push::AdamWHyper& h) {
  upload(test::device(), b, 0, &h, sizeof(h));
}

// One torch.optim.AdamW step for one element, transcribed from PyTorch's _single_tensor_adamw
// (decay first, then the moments, then step_size = lr / bc1 and
// denom = sqrt(v) / sqrt(bc2) + eps), in double.
struct Element {
  double p, m, v;
};
Element torch_adamw(Element e, double g, double lr, int t, bool decay) {
  const double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 0.1;
  if (decay) e.p *= 1 - lr * wd;
  e.m = e.m + (1 - beta1) * (g - e.m);  // exp_avg.lerp_(grad, 1 - beta1)
  e.v = beta2 * e.v + (1 - beta2) * g * g;
  const double bc1 = 1 - std::pow(beta1, t);
  const double bc2 = 1 - std::pow(beta2, t);
  const double step_size = lr / bc1;
  const double denom = std::sqrt(e.v) / std::sqrt(bc2) + eps;
  e.p -= step_size * e.m / denom;
  return e;
}

// Float kernel against double arithmetic: |gpu − want| ≤ 1e-5·|want| + floor. The floor is
// 1e-6 of the magnitude of the terms that were summed (m = β1·m + (1−β1)·g can cancel to far
// below its terms, and float rounding is relative to the terms, not to the result).
void require_close(float gpu, double want, const char* what, std::size_t i, double terms = 0) {
  const double tol = 1e-5 * std::abs(want) + 1e-6 * terms + 1e-12;
  if (std::abs(double(gpu) - want) <= tol) return;  // REQUIRE only on failure: 10^6 elements
  INFO(what << "[" << i << "] gpu " << gpu << " want " << want);
  REQUIRE(std::abs(double(gpu) - want) <= tol);
}

}  // namespace

TEST_CASE("the hand transcription of PyTorch's AdamW reproduces a worked first step") {
  // Step 1, p = 0.5, g = 0.1, lr = 1e-2, wd = 0.1: decay gives 0.5 * (1 - 1e-3) = 0.4995;
  // m = 0.01, v = 1e-5, m_hat = 0.1, v_hat = 0.01, so the update is 1e-2 * 0.1 / (0.1 + 1e-8).
  const Element e = torch_adamw({0.5, 0, 0}, 0.1, 1e-2, 1, true);
  REQUIRE(e.m == Approx(0.01).epsilon(1e-14));
  REQUIRE(e.v == Approx(1e-5).epsilon(1e-14));
  REQUIRE(e.p == Approx(0.4995 - 1e-3 / (0.1 + 1e-8)).epsilon(1e-14));
  REQUIRE(e.p == Approx(0.489500001).epsilon(1e-12));
}

TEST_CASE("AdamW matches PyTorch's formula for two steps, with a new learning rate replayed") {
  const std::vector<float> p0 = {0.5f, -1.25f, 0.0f, 3.0f, 0.02f};
  const std::vector<float> g1 = {0.1f, -0.2f, 0.05f, 0.0f, -4.0f};
  const std::vector<float> g2 = {-0.3f, 0.4f, 0.05f, 1e-3f, 2.5f};
  const double lr1 = 1e-2, lr2 = 5e-3;
  const std::size_t n = p0.size();
  const std::vector<float> zeros(n, 0.0f);

  // Two tensors with the same data: a 2-D one (decayed) and a 1-D one (not decayed).
  Buffer p2d = test::upload_buffer(p0, "p2d"), p1d = test::upload_buffer(p0, "p1d");
  Buffer m2d = test::upload_buffer(zeros, "m2d"), m1d = test::upload_buffer(zeros, "m1d");
  Buffer v2d = test::upload_buffer(zeros, "v2d"), v1d = test::upload_buffer(zeros, "v1d");
  Buffer grad = test::upload_buffer(g1, "grad");
  Buffer hyper = test::upload_buffer(std::vector<uint8_t>(sizeof(push::AdamWHyper)), "hyper");
  kernels::AdamWConfig config{lr1, 0.9, 0.999, 1e-8, 0.1};
  upload_hyper(hyper, kernels::adamw_hyper(config, 1));

  // Recorded once; step 2 changes only the buffers' contents.
  Executor ex(test::kernels(),
              {kernels::adamw(quirks(), p2d.whole(), grad.whole(), m2d.whole(), v2d.whole(),
                              hyper.whole(), {}, uint32_t(n), true),
               kernels::adamw(quirks(), p1d.whole(), grad.whole(), m1d.whole(), v1d.whole(),
                              hyper.whole(), {}, uint32_t(n), false)});
  ex.run();
  upload(test::device(), grad, std::span<const float>(g2));
  config.lr = lr2;
  upload_hyper(hyper, kernels::adamw_hyper(config, 2));
  ex.run();

  for (bool decay : {true, false}) {
    INFO("weight decay " << decay);
    const auto p = test::read<float>(decay ? p2d : p1d, n);
    const auto m = test::read<float>(decay ? m2d : m1d, n);
    const auto v = test::read<float>(decay ? v2d : v1d, n);
    for (std::size_t i = 0; i < n; ++i) {
      Element e{p0[i], 0, 0};
      e = torch_adamw(e, g1[i], lr1, 1, decay);
      e = torch_adamw(e, g2[i], lr2, 2, decay);
      require_close(p[i], e.p, "param", i);
      require_close(m[i], e.m, "m", i);
      require_close(v[i], e.v, "v", i);
    }
  }
  // The flag matters: every parameter is nonzero when decay applies (0.0 moves in step 1).
  const auto pd = test::read<float>(p2d, n), pu = test::read<float>(p1d, n);
  for (std::size_t i = 0; i < n; ++i) REQUIRE(pd[i] != pu[i]);
}

TEST_CASE("the reference AdamW agrees with the hand transcription of PyTorch") {
  std::vector<double> p = {0.5, -1.25, 0.0, 3.0}, m(4, 0.0), v(4, 0.0);
  const std::vector<double> g1 = {0.1, -0.2, 0.05, 0.0}, g2 = {-0.3, 0.4, 0.05, 1e-3};
  const ref::AdamW h1{1e-2, 0.9, 0.999, 1e-8, 0.1}, h2{5e-3, 0.9, 0.999, 1e-8, 0.1};
  ref::adamw_step(p, g1, m, v, h1, 1, 1.0, true);
  ref::adamw_step(p, g2, m, v, h2, 2, 1.0, true);
  for (std::size_t i = 0; i < 4; ++i) {
    Element e{i == 0 ? 0.5 : i == 1 ? -1.25 : i == 2 ? 0.0 : 3.0, 0, 0};
    e = torch_adamw(e, g1[i], 1e-2, 1, true);
    e = torch_adamw(e, g2[i], 5e-3, 2, true);
    REQUIRE(p[i] == Approx(e.p).epsilon(1e-12).margin(1e-15));
    REQUIRE(m[i] == Approx(e.m).epsilon(1e-12).margin(1e-15));
    REQUIRE(v[i] == Approx(e.v).epsilon(1e-12).margin(1e-15));
  }
}

TEST_CASE("AdamW matches the reference on a large tensor with a clip scale") {
  // Above 4096 workgroups of 256, so the grid-stride loop runs more than once per invocation.
  const uint32_t n = 1'100'003;
  auto p = test::random_floats(n, 41), g = test::random_floats(n, 42);
  auto m = test::random_floats(n, 43, -0.1f, 0.1f), v = test::random_floats(n, 44, 0.0f, 0.01f);
  const float clip_scale = 0.37f;
  const push::GradNormResult clip{2.5f, clip_scale};
  const kernels::AdamWConfig config{3e-3, 0.9, 0.95, 1e-8, 0.1};
  const int step = 3;
  for (bool decay : {true, false}) {
    DYNAMIC_SECTION("weight decay " << decay) {
      Buffer dp = test::upload_buffer(p, "p"), dg = test::upload_buffer(g, "g");
      Buffer dm = test::upload_buffer(m, "m"), dv = test::upload_buffer(v, "v");
      Buffer hyper = test::upload_buffer(std::vector<uint8_t>(sizeof(push::AdamWHyper)), "hyper");
      upload_hyper(hyper, kernels::adamw_hyper(config, step));
      Buffer dclip = test::upload_buffer(std::vector<push::GradNormResult>{clip}, "clip");
      test::run_once({kernels::adamw(quirks(), dp.whole(), dg.whole(), dm.whole(), dv.whole(),
                                     hyper.whole(), dclip.whole(), n, decay)});
      auto rp = p, rm = m, rv = v;
      ref::adamw_step(rp, g, rm, rv, {3e-3, 0.9, 0.95, 1e-8, 0.1}, step, clip_scale, decay);
      const auto gp = test::read<float>(dp, n), gm = test::read<float>(dm, n),
                 gv = test::read<float>(dv, n);
      // Terms: |p| ≤ 1 plus an update ≤ lr·|m̂|/√v̂; |m| ≤ 0.1 and |g·clip| ≤ 0.37; v ≤ 0.01.
      for (std::size_t i = 0; i < n; ++i) {
        require_close(gp[i], rp[i], "param", i, 1.0);
        require_close(gm[i], rm[i], "m", i, 0.1);
        require_close(gv[i], rv[i], "v", i, 0.01);
      }
    }
  }
}

namespace {

struct NormRun {
  std::vector<push::GradNormResult> results;  // one per max_norm
};

// grad_norm over `grads` with one finalize per max_norm, into garbage-filled buffers.
NormRun run_grad_norm(const std::vector<std::vector<float>>& grads,
                      const std::vector<float>& max_norms, int runs = 1) {
  std::vector<uint64_t> counts;
  for (const auto& g : grads) counts.push_back(g.size());
  const kernels::GradNormLayout layout = kernels::grad_norm_layout(counts);
  std::vector<Buffer> bufs;
  for (const auto& g : grads) bufs.push_back(test::upload_buffer(g, "grad"));
  Buffer partials = test::garbage_buffer<float>(layout.total, "partials");
  std::vector<Buffer> outs;
  for (std::size_t i = 0; i < max_norms.size(); ++i)
    outs.push_back(test::garbage_buffer<push::GradNormResult>(1, "norm"));
  std::vector<Dispatch> ds;
  for (std::size_t t = 0; t < grads.size(); ++t)
    ds.push_back(kernels::grad_norm_partial(
        quirks(), bufs[t].whole(), uint32_t(counts[t]),
        partials.slice(layout.offsets[t], layout.slots[t] * sizeof(float))));
  for (std::size_t i = 0; i < max_norms.size(); ++i)
    ds.push_back(kernels::grad_norm_finalize(quirks(), partials.whole(), layout.total, max_norms[i],
                                             outs[i].whole()));
  Executor ex(test::kernels(), std::move(ds));
  // The partial sums of different tensors go to disjoint ranges: one barrier, before finalize.
  REQUIRE(ex.barrier_count() == 1);
  NormRun r;
  for (int k = 0; k < runs; ++k) {
    ex.run();
    for (const auto& o : outs) r.results.push_back(test::read<push::GradNormResult>(o, 1)[0]);
  }
  return r;
}

std::vector<std::vector<float>> gradient_set() {
  std::vector<std::vector<float>> grads;
  uint64_t seed = 50;
  for (std::size_t n : {1u, 7u, 64u, 1000u, 131'073u, 300'000u})
    grads.push_back(test::random_floats(n, ++seed));
  return grads;
}

}  // namespace

TEST_CASE("grad_norm matches a double sum and gives PyTorch's clip scale") {
  const auto grads = gradient_set();
  const double want = ref::grad_norm(std::vector<std::vector<double>>([&] {
    std::vector<std::vector<double>> d;
    for (const auto& g : grads) d.emplace_back(g.begin(), g.end());
    return d;
  }()));
  const float want_f = float(want);
  const std::vector<float> max_norms = {0.0f, 2 * want_f, want_f / 4, 1.0f};
  const NormRun r = run_grad_norm(grads, max_norms);
  // A sum of 4·10^5 squares; compensated summation keeps it far inside 1e-5.
  for (std::size_t i = 0; i < max_norms.size(); ++i) {
    INFO("max_norm " << max_norms[i] << " norm " << r.results[i].norm << " want " << want);
    REQUIRE(std::abs(r.results[i].norm - want) <= 1e-5 * want);
    const float scale = ref::clip_scale(r.results[i].norm, max_norms[i]);
    REQUIRE(std::abs(r.results[i].clip_scale - scale) <= 1e-6f * scale);
  }
  REQUIRE(r.results[0].clip_scale == 1.0f);  // no clipping
  REQUIRE(r.results[1].clip_scale == 1.0f);  // norm below max_norm
  REQUIRE(r.results[2].clip_scale == Approx(0.25).epsilon(1e-5));
}

TEST_CASE("grad_norm is bit-identical across runs") {
  const NormRun r = run_grad_norm(gradient_set(), {1.0f}, 2);
  REQUIRE(r.results.size() == 2);
  REQUIRE(std::memcmp(&r.results[0], &r.results[1], sizeof(push::GradNormResult)) == 0);
}

TEST_CASE("grad_norm slots are 256-byte aligned ranges covering every tensor") {
  const std::vector<uint64_t> counts = {1, 64, 131'072, 131'073, 38'597'376};
  const auto l = kernels::grad_norm_layout(counts);
  uint64_t next = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    REQUIRE(l.offsets[i] == next);
    REQUIRE(l.offsets[i] % 256 == 0);
    REQUIRE(l.slots[i] == kernels::grad_norm_slots(counts[i]));
    REQUIRE(l.slots[i] % 64 == 0);
    next += l.slots[i] * sizeof(float);
  }
  REQUIRE(l.total * sizeof(float) == next);
  REQUIRE(l.slots[0] == 64);
  REQUIRE(l.slots[2] == 64);
  REQUIRE(l.slots[3] == 128);
  REQUIRE(l.slots[4] == 1024);
}

TEST_CASE("grad_norm feeds AdamW's clip scale") {
  // A clipped step: the AdamW update uses the gradient scaled by max_norm / norm.
  const auto g = test::random_floats(5000, 61), p = test::random_floats(5000, 62);
  const std::vector<float> zeros(g.size(), 0.0f);
  Buffer dg = test::upload_buffer(g, "g"), dp = test::upload_buffer(p, "p");
  Buffer dm = test::upload_buffer(zeros, "m"), dv = test::upload_buffer(zeros, "v");
  const std::vector<uint64_t> counts = {g.size()};
  const auto layout = kernels::grad_norm_layout(counts);
  Buffer partials = test::garbage_buffer<float>(layout.total, "partials");
  Buffer norm = test::garbage_buffer<push::GradNormResult>(1, "norm");
  Buffer hyper = test::upload_buffer(std::vector<uint8_t>(sizeof(push::AdamWHyper)), "hyper");
  const kernels::AdamWConfig config{1e-2, 0.9, 0.999, 1e-8, 0.1};
  upload_hyper(hyper, kernels::adamw_hyper(config, 1));
  const float max_norm = 0.5f;
  const uint32_t n = uint32_t(g.size());
  test::run_once({kernels::grad_norm_partial(quirks(), dg.whole(), n, partials.whole()),
                  kernels::grad_norm_finalize(quirks(), partials.whole(), layout.total, max_norm,
                                              norm.whole()),
                  kernels::adamw(quirks(), dp.whole(), dg.whole(), dm.whole(), dv.whole(),
                                 hyper.whole(), norm.whole(), n, true)});
  const float want_norm = ref::grad_norm(std::vector<std::vector<float>>{g});
  const float scale = ref::clip_scale(want_norm, max_norm);
  REQUIRE(scale < 0.02f);  // clipping is active
  auto rp = p, rm = zeros, rv = zeros;
  ref::adamw_step(rp, g, rm, rv, {1e-2, 0.9, 0.999, 1e-8, 0.1}, 1, scale, true);
  const auto gm = test::read<float>(dm, n), gp = test::read<float>(dp, n);
  for (std::size_t i = 0; i < n; ++i) {
    require_close(gm[i], rm[i], "m", i, 0.1 * scale);
    require_close(gp[i], rp[i], "param", i, 1.0);
  }
}

// Throughput at GPT-2 small's c_fc weight (768 x 3072). Hidden: run with
// `remat_optimizer_test [.bench]`.
TEST_CASE("optimizer throughput at GPT-2 small c_fc", "[.bench]") {
  const uint32_t n = 768 * 3072;
  Buffer p = test::upload_buffer(test::random_floats(n, 1), "p");
  Buffer g = test::upload_buffer(test::random_floats(n, 2), "g");
  Buffer m = test::upload_buffer(std::vector<float>(n, 0.0f), "m");
  Buffer v = test::upload_buffer(std::vector<float>(n, 0.0f), "v");
  Buffer hyper = test::upload_buffer(std::vector<uint8_t>(sizeof(push::AdamWHyper)), "hyper");
  upload_hyper(hyper, kernels::adamw_hyper({}, 1));
  const uint32_t slots = kernels::grad_norm_slots(n);
  Buffer partials = test::garbage_buffer<float>(slots, "partials");
  Buffer norm = test::garbage_buffer<push::GradNormResult>(1, "norm");
  Executor ex(test::kernels(),
              {kernels::grad_norm_partial(quirks(), g.whole(), n, partials.whole()),
               kernels::grad_norm_finalize(quirks(), partials.whole(), slots, 1.0f, norm.whole()),
               kernels::adamw(quirks(), p.whole(), g.whole(), m.whole(), v.whole(), hyper.whole(),
                              norm.whole(), n, true)},
              ExecutorOptions{.timestamps = true});
  ex.run();
  ex.run();
  const auto ms = ex.dispatch_ms();
  std::printf(
      "grad_norm_partial %.2f ms %.2f GB/s | finalize (%u slots) %.3f ms | adamw %.2f ms "
      "%.2f GB/s\n",
      ms[0], 4.0 * n / ms[0] * 1e-6, slots, ms[1], ms[2], 28.0 * n / ms[2] * 1e-6);
}

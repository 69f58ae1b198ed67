// AdamW and the global gradient norm: AdamW against PyTorch's update worked by hand for two
// steps (including a learning-rate change through the hyper buffer without re-recording), and
// against the reference on a large tensor with clipping; the gradient norm against a double
// sum, PyTorch's clip scale, and bit-identical reruns.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

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

namespace {

// The device's quirks with the texel-fetch variants switched on or off.
DeviceQuirks with_texels(bool on) {
  DeviceQuirks q = quirks();
  q.texel_fetch_beats_storage_loads = on;
  return q;
}

double sum_ms(const std::vector<double>& ms, std::size_t begin, std::size_t end) {
  double t = 0;
  for (std::size_t i = begin; i < end; ++i) t += ms[i];
  return t;
}

struct AdamWState {
  std::vector<float> p, m, v;
};

// `steps` clipped AdamW steps from the same start on `n` floats, through adamw_pieces with
// quirks `q` (max_binding_bytes possibly lowered to force pieces), a new gradient and learning
// rate each step; the state after every step. `kernels_used` gets the kernel of every dispatch.
std::vector<AdamWState> run_adamw(const DeviceQuirks& q, uint32_t n, int steps, bool decay,
                                  std::vector<KernelId>& kernels_used) {
  Buffer p = test::upload_buffer(test::random_floats(n, 71), "p");
  Buffer m = test::upload_buffer(test::random_floats(n, 72, -0.1f, 0.1f), "m");
  Buffer v = test::upload_buffer(test::random_floats(n, 73, 0.0f, 0.01f), "v");
  Buffer g = test::upload_buffer(test::random_floats(n, 74), "g");
  Buffer hyper = test::upload_buffer(std::vector<uint8_t>(sizeof(push::AdamWHyper)), "hyper");
  Buffer clip = test::upload_buffer(std::vector<push::GradNormResult>{{2.5f, 0.37f}}, "clip");
  Executor ex(test::kernels(), kernels::adamw_pieces(q, p.whole(), g.whole(), m.whole(), v.whole(),
                                                     hyper.whole(), clip.whole(), n, decay));
  kernels_used.clear();
  for (const Dispatch& d : ex.dispatches()) kernels_used.push_back(d.kernel);
  std::vector<AdamWState> states;
  for (int step = 1; step <= steps; ++step) {
    upload(test::device(), g, std::span<const float>(test::random_floats(n, 80 + step)));
    upload_hyper(hyper, kernels::adamw_hyper({1e-3 * step, 0.9, 0.95, 1e-8, 0.1}, step));
    ex.run();
    states.push_back({test::read<float>(p, n), test::read<float>(m, n), test::read<float>(v, n)});
  }
  return states;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("AdamW through texel views gives the storage kernel's bits over several steps") {
  // 4,194,308 floats are more than 4096 workgroups of 256 vec4s: the texel kernel's grid-stride
  // loop runs twice. 10,003 is not a multiple of 4: one dispatch falls back to adamw.comp, or,
  // bound in 16 KiB pieces (4096 floats), only the last piece does.
  struct Case {
    uint32_t n;
    uint64_t max_binding_bytes;  // 0: the device's
    std::vector<KernelId> want;
  };
  const auto T = KernelId::adamw_texels, S = KernelId::adamw;
  const std::vector<Case> cases = {
      {4'194'308, 0, {T}}, {10'003, 0, {S}}, {10'003, 16384, {T, T, S}}, {12'288, 16384, {T, T, T}}};
  for (const Case& c : cases) {
    for (bool decay : {true, false}) {
      DYNAMIC_SECTION("n " << c.n << " pieces of " << c.max_binding_bytes << " bytes, decay "
                           << decay) {
        DeviceQuirks storage_q = with_texels(false), texel_q = with_texels(true);
        if (c.max_binding_bytes) texel_q.max_binding_bytes = c.max_binding_bytes;
        std::vector<KernelId> used_storage, used_texels;
        const auto want = run_adamw(storage_q, c.n, 3, decay, used_storage);
        const auto got = run_adamw(texel_q, c.n, 3, decay, used_texels);
        REQUIRE(used_storage == std::vector<KernelId>{S});
        REQUIRE(used_texels == c.want);
        for (std::size_t s = 0; s < want.size(); ++s) {
          INFO("after step " << s + 1);
          REQUIRE(same_bits(got[s].p, want[s].p));
          REQUIRE(same_bits(got[s].m, want[s].m));
          REQUIRE(same_bits(got[s].v, want[s].v));
        }
        // The steps moved every tensor (the comparison is not of untouched buffers).
        REQUIRE_FALSE(same_bits(want[0].p, want[1].p));
        REQUIRE_FALSE(same_bits(want[0].m, want[1].m));
        REQUIRE_FALSE(same_bits(want[0].v, want[1].v));
      }
    }
  }
}

TEST_CASE("AdamW falls back to the storage kernel for slices off a 16-byte boundary") {
  // A slice starting one float into its buffer cannot be a texel view on every device.
  const uint32_t n = 1024;
  Buffer b = test::upload_buffer(std::vector<float>(n + 4, 0.0f), "b");
  const BufferSlice whole = b.slice(0, n * sizeof(float)), off = b.slice(4, n * sizeof(float));
  const DeviceQuirks q = with_texels(true);
  CHECK(kernels::adamw(q, whole, whole, whole, whole, whole, {}, n, true).kernel ==
        KernelId::adamw_texels);
  CHECK(kernels::adamw(q, whole, off, whole, whole, whole, {}, n, true).kernel == KernelId::adamw);
  CHECK(kernels::grad_norm_partial(q, whole, n, whole).kernel ==
        KernelId::grad_norm_partial_texels);
  CHECK(kernels::grad_norm_partial(q, off, n, whole).kernel == KernelId::grad_norm_partial);
}

TEST_CASE("the gradient norm through texel views gives the storage kernel's partial sums") {
  // Tensors of 1, 7 and 1001 floats fall back; the rest are read four floats per fetch, and
  // 4,194,308 floats in 4 MiB pieces take several texel dispatches.
  std::vector<std::vector<float>> grads;
  uint64_t seed = 90;
  for (std::size_t n : {1u, 7u, 64u, 1001u, 131'076u, 300'000u, 4'194'308u})
    grads.push_back(test::random_floats(n, ++seed));
  std::vector<uint64_t> counts;
  std::vector<Buffer> bufs;
  std::vector<BufferSlice> slices;
  for (const auto& g : grads) {
    counts.push_back(g.size());
    bufs.push_back(test::upload_buffer(g, "grad"));
    slices.push_back(bufs.back().whole());
  }
  DeviceQuirks storage_q = with_texels(false), texel_q = with_texels(true);
  storage_q.max_binding_bytes = texel_q.max_binding_bytes = 4u << 20;
  const uint32_t floats = kernels::grad_norm_partials_floats(texel_q, counts);
  REQUIRE(floats == kernels::grad_norm_partials_floats(storage_q, counts));
  struct Run {
    std::vector<float> partials;
    push::GradNormResult result;
    std::size_t texel_dispatches = 0;
  };
  auto run = [&](const DeviceQuirks& q) {
    Buffer partials = test::garbage_buffer<float>(floats, "partials");
    Buffer result = test::garbage_buffer<push::GradNormResult>(1, "norm");
    Run r;
    auto ds = kernels::grad_norm(q, slices, counts, partials.whole(), 1.0f, result.whole());
    for (const Dispatch& d : ds)
      r.texel_dispatches += d.kernel == KernelId::grad_norm_partial_texels;
    test::run_once(std::move(ds));
    r.partials = test::read<float>(partials, floats);
    r.result = test::read<push::GradNormResult>(result, 1)[0];
    return r;
  };
  const Run want = run(storage_q), got = run(texel_q);
  REQUIRE(want.texel_dispatches == 0);
  // 64, 131,076 and 300,000 floats, and 4,194,308 in five pieces (the last of 4 floats).
  REQUIRE(got.texel_dispatches == 3 + 5);
  REQUIRE(same_bits(got.partials, want.partials));
  REQUIRE(std::memcmp(&got.result, &want.result, sizeof(push::GradNormResult)) == 0);
  REQUIRE(want.result.norm > 0.0f);
}

// Throughput at GPT-2 small's c_fc weight (768 x 3072) and token embedding (50257 x 768, bound
// in pieces on lavapipe), storage-buffer kernels against the texel-fetch ones. AdamW moves 28
// bytes per float (reads p, g, m, v; writes p, m, v), the partial sums 4. Hidden: run with
// `remat_optimizer_test [.bench]`.
TEST_CASE("optimizer throughput at GPT-2 small c_fc and wte", "[.bench]") {
  for (const uint32_t n : {768u * 3072u, 50257u * 768u}) {
    Buffer p = test::upload_buffer(test::random_floats(n, 1), "p");
    Buffer g = test::upload_buffer(test::random_floats(n, 2), "g");
    Buffer m = test::upload_buffer(std::vector<float>(n, 0.0f), "m");
    Buffer v = test::upload_buffer(std::vector<float>(n, 0.0f), "v");
    Buffer hyper = test::upload_buffer(std::vector<uint8_t>(sizeof(push::AdamWHyper)), "hyper");
    upload_hyper(hyper, kernels::adamw_hyper({}, 1));
    const std::vector<uint64_t> counts = {n};
    const uint32_t slots = kernels::grad_norm_partials_floats(quirks(), counts);
    Buffer partials = test::garbage_buffer<float>(slots, "partials");
    Buffer norm = test::garbage_buffer<push::GradNormResult>(1, "norm");
    for (bool texels : {false, true}) {
      const DeviceQuirks q = with_texels(texels);
      const std::vector<BufferSlice> grads = {g.whole()};
      std::vector<Dispatch> ds =
          kernels::grad_norm(q, grads, counts, partials.whole(), 1.0f, norm.whole());
      const std::size_t partial_end = ds.size() - 1, adamw_begin = ds.size();
      for (Dispatch& d : kernels::adamw_pieces(q, p.whole(), g.whole(), m.whole(), v.whole(),
                                               hyper.whole(), norm.whole(), n, true))
        ds.push_back(std::move(d));
      Executor ex(test::kernels(), std::move(ds), ExecutorOptions{.timestamps = true});
      // The best of five runs after a warm-up: the machine may be shared.
      ex.run();
      double gn = 1e30, fin = 1e30, adam = 1e30;
      for (int r = 0; r < 5; ++r) {
        ex.run();
        const auto ms = ex.dispatch_ms();
        gn = std::min(gn, sum_ms(ms, 0, partial_end));
        fin = std::min(fin, ms[partial_end]);
        adam = std::min(adam, sum_ms(ms, adamw_begin, ms.size()));
      }
      std::printf(
          "%-7s n %9u | grad_norm_partial %7.2f ms %5.2f GB/s | finalize (%u slots) %.3f ms | "
          "adamw %7.2f ms %5.2f GB/s\n",
          texels ? "texels" : "storage", n, gn, 4.0 * n / gn * 1e-6, slots, fin, adam,
          28.0 * n / adam * 1e-6);
    }
  }
}

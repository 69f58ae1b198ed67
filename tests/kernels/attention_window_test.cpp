// Sliding-window attention (query t sees keys t - window + 1 .. t) and a score scale other than
// 1/sqrt(D): the reference's backward against finite differences and its edge cases (window 1,
// window >= T); the kernels against it in every variant, with grouped-query heads, odd sizes,
// packed rows and GPT-2's fused qkv; a window of T or more gives the unwindowed bytes; the kernels
// skip the key blocks outside the windows rather than mask them (NaN there reaches nothing); and
// the CPU driver's loop budget counts the keys a window visits.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <string>

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

Shape gqa(uint32_t B, uint32_t T, uint32_t NH, uint32_t KV, uint32_t D, uint32_t window,
          float scale = 0.0f) {
  return {B, T, NH * D, NH, KV, window, scale};
}
ref::GqaDims dims(const Shape& s) {
  return {s.B, s.T, s.NH, s.KV, s.C / s.NH, s.window, double(s.scale)};
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

std::string name(const Shape& s) {
  return "B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " NH=" + std::to_string(s.NH) +
         " KV=" + std::to_string(s.KV) + " D=" + std::to_string(s.C / s.NH) +
         " window=" + std::to_string(s.window) + " scale=" + std::to_string(s.scale);
}

// Rows of T positions holding examples of the given lengths in turn (a new row when one does
// not fit), then padding positions 0, 1, ...
std::vector<uint32_t> pack(const std::vector<uint32_t>& lengths, uint32_t B, uint32_t T) {
  std::vector<uint32_t> pos(std::size_t(B) * T, 0);
  std::vector<std::size_t> used(B, 0);
  std::size_t row = 0;
  for (uint32_t n : lengths) {
    if (used[row] + n > T) ++row;
    REQUIRE(row < B);
    for (uint32_t i = 0; i < n; ++i) pos[row * T + used[row]++] = i;
  }
  for (std::size_t r = 0; r < B; ++r)
    for (std::size_t t = used[r], p = 0; t < T; ++t, ++p) pos[r * T + t] = uint32_t(p);
  return pos;
}

struct Io {
  std::vector<float> q, k, v, dout;
};
struct Result {
  std::vector<float> out, lse, dq, dk, dv;
};

Io random_io(const Shape& s, uint64_t seed) {
  return {test::random_floats(q_size(s), seed), test::random_floats(kv_size(s), seed + 1),
          test::random_floats(kv_size(s), seed + 2), test::random_floats(q_size(s), seed + 3)};
}

Result reference(const Shape& s, const Io& io, const std::vector<uint32_t>& pos = {}) {
  Result r;
  ref::gqa_attention_forward(r.out, r.lse, io.q, io.k, io.v, dims(s), pos);
  ref::gqa_attention_backward(r.dq, r.dk, r.dv, io.dout, io.q, io.k, io.v, dims(s), pos);
  return r;
}

// Forward, then backward on its outputs; `pos` empty runs plain (unpacked) rows.
Result gpu(const Shape& s, const Io& io, const DeviceQuirks& q,
           const std::vector<uint32_t>& pos = {}) {
  Buffer qb = test::upload_buffer(io.q, "q"), kb = test::upload_buffer(io.k, "k"),
         vb = test::upload_buffer(io.v, "v"), db = test::upload_buffer(io.dout, "dout");
  Buffer out = test::garbage_buffer<float>(q_size(s), "out");
  Buffer lse = test::garbage_buffer<float>(lse_size(s), "lse");
  Buffer dq = test::garbage_buffer<float>(q_size(s), "dq");
  Buffer dk = test::garbage_buffer<float>(kv_size(s), "dk");
  Buffer dv = test::garbage_buffer<float>(kv_size(s), "dv");
  const std::vector<uint32_t> unused{0};
  Buffer pb = test::upload_buffer(pos.empty() ? unused : pos, "positions");
  const BufferSlice p = pos.empty() ? BufferSlice{} : pb.whole();
  test::run_once(
      {kernels::gqa_attention_forward(q, s, qb.whole(), kb.whole(), vb.whole(), out.whole(),
                                      lse.whole(), DType::f32, p),
       kernels::gqa_attention_backward(q, s, db.whole(), qb.whole(), kb.whole(), vb.whole(),
                                       out.whole(), lse.whole(), dq.whole(), dk.whole(), dv.whole(),
                                       GradWrite::overwrite, DType::f32, p)});
  return {test::read<float>(out, q_size(s)), test::read<float>(lse, lse_size(s)),
          test::read<float>(dq, q_size(s)), test::read<float>(dk, kv_size(s)),
          test::read<float>(dv, kv_size(s))};
}

std::vector<double> norm_mag(const std::vector<float>& x) {
  return std::vector<double>(x.size(), test::max_abs(x));
}

// The criterion of the unwindowed tests: each tensor within 1e-5 of its largest element.
void require_close(const Result& g, const Result& want, const std::string& what) {
  INFO(what);
  const double eo = test::require_close_to(g.out, want.out, norm_mag(want.out), 1e-5, "out");
  const double el = test::require_close_to(g.lse, want.lse,
                                           std::vector<double>(want.lse.size(), 1.0), 1e-5, "lse");
  const double eq = test::require_close_to(g.dq, want.dq, norm_mag(want.dq), 1e-5, "dq");
  const double ek = test::require_close_to(g.dk, want.dk, norm_mag(want.dk), 1e-5, "dk");
  const double ev = test::require_close_to(g.dv, want.dv, norm_mag(want.dv), 1e-5, "dv");
  std::printf("%s: out %.1e lse %.1e dq %.1e dk %.1e dv %.1e\n", what.c_str(), eo, el, eq, ek, ev);
}

void require_same_bits(const Result& a, const Result& b) {
  REQUIRE(test::bit_identical(a.out, b.out));
  REQUIRE(test::bit_identical(a.lse, b.lse));
  REQUIRE(test::bit_identical(a.dq, b.dq));
  REQUIRE(test::bit_identical(a.dk, b.dk));
  REQUIRE(test::bit_identical(a.dv, b.dv));
}

std::string variant_name(const DeviceQuirks& q) {
  return std::string(q.texel_fetch_beats_storage_loads ? "texels"
                     : q.barriers_are_expensive        ? "cpu storage"
                                                       : "gpu storage");
}

}  // namespace

TEST_CASE("windowed attention reference backward agrees with finite differences in double") {
  // Grouped-query with a window and a scale; packed rows (examples of 4, 3 and 4) with a window
  // that cuts the longer ones.
  struct Case {
    Shape s;
    std::vector<uint32_t> pos;
  };
  const Case cases[] = {{gqa(2, 9, 4, 2, 3, 3, 0.7f), {}},
                        {gqa(1, 8, 3, 1, 4, 1), {}},
                        {gqa(1, 11, 2, 1, 4, 2), {0, 1, 2, 3, 0, 1, 2, 0, 1, 2, 3}}};
  for (const Case& c : cases) {
    DYNAMIC_SECTION(name(c.s) << " packed " << !c.pos.empty()) {
      const auto n = dims(c.s);
      std::vector<double> q = test::random_doubles(q_size(c.s), 51 + c.s.T),
                          k = test::random_doubles(kv_size(c.s), 52 + c.s.T),
                          v = test::random_doubles(kv_size(c.s), 53 + c.s.T);
      const auto r = test::random_doubles(q_size(c.s), 54 + c.s.T);  // loss = Σ out ⊙ r
      std::vector<double> dq, dk, dv;
      ref::gqa_attention_backward(dq, dk, dv, r, q, k, v, n, c.pos);
      auto loss = [&] {
        std::vector<double> out, lse;
        ref::gqa_attention_forward(out, lse, q, k, v, n, c.pos);
        return test::weighted_sum(out, r);
      };
      test::require_matches_finite_differences(loss, q, dq, "dq");
      test::require_matches_finite_differences(loss, k, dk, "dk");
      test::require_matches_finite_differences(loss, v, dv, "dv");
    }
  }
}

TEST_CASE("windowed attention reference: window 1 sees itself, window >= T sees every key") {
  const Shape s = gqa(2, 7, 4, 2, 4, 1, 0.3f);
  const auto n = dims(s);
  const std::size_t D = n.D;
  const auto q = test::random_doubles(q_size(s), 61), k = test::random_doubles(kv_size(s), 62),
             v = test::random_doubles(kv_size(s), 63);
  std::vector<double> out, lse;
  ref::gqa_attention_forward(out, lse, q, k, v, n);
  // One key: out_t = v_t of the query head's key/value head, lse_t its scaled score.
  for (std::size_t bt = 0; bt < n.B * n.T; ++bt)
    for (std::size_t h = 0; h < n.NH; ++h) {
      const std::size_t g = h / (n.NH / n.KV);
      double score = 0;
      for (std::size_t d = 0; d < D; ++d) {
        CHECK(out[(bt * n.NH + h) * D + d] == v[(bt * n.KV + g) * D + d]);
        score += q[(bt * n.NH + h) * D + d] * k[(bt * n.KV + g) * D + d];
      }
      const std::size_t b = bt / n.T, t = bt % n.T;
      CHECK(lse[(b * n.NH + h) * n.T + t] == Approx(0.3 * score).margin(1e-14));
    }
  // A window of T or more keys is no window; an explicit scale of 1/sqrt(D) is the default.
  ref::GqaDims all = n;
  all.window = 0;
  all.scale = 0.5;  // 1/sqrt(4)
  std::vector<double> want, want_lse;
  ref::gqa_attention_forward(want, want_lse, q, k, v, all);
  for (std::size_t w : {n.T, n.T + 5}) {
    ref::GqaDims wide = n;
    wide.window = w;
    wide.scale = 0.0;
    ref::gqa_attention_forward(out, lse, q, k, v, wide);
    CHECK(out == want);
    CHECK(lse == want_lse);
  }
}

TEST_CASE("windowed attention kernels match the reference in every variant") {
  // T = 37 with a window of 5 (multi-query); a scale; a window past one key block (9) on
  // multi-head; SmolLM2's 9 heads over 3 at 64 (two rows per texel invocation); a window of
  // T - 1 (the first key drops out of the last row only); head sizes 128 and Gemma 3's 256.
  const Shape shapes[] = {gqa(1, 37, 4, 1, 8, 5),           gqa(2, 37, 6, 2, 16, 5, 0.3f),
                          gqa(2, 23, 3, 3, 16, 9),          gqa(1, 40, 9, 3, 64, 17, 0.0625f),
                          gqa(2, 33, 4, 2, 32, 32),         gqa(1, 50, 2, 1, 128, 12),
                          gqa(1, 21, 4, 1, 256, 7, 0.0625f)};
  for (const Shape& s : shapes) {
    DYNAMIC_SECTION(name(s)) {
      const Io io = random_io(s, 300 + s.T + s.window);
      const Result want = reference(s, io);
      std::vector<Result> got;
      for (const DeviceQuirks& q : test::attention_variants()) {
        got.push_back(gpu(s, io, q));
        require_close(got.back(), want, name(s) + " " + variant_name(q));
      }
      // Blocks are laid out alike in every variant, and a row's sums do not depend on the rows
      // per invocation: the same bits.
      for (const Result& r : got) require_same_bits(r, got[0]);
    }
  }
}

TEST_CASE("windowed attention on packed rows matches the reference in every variant") {
  // Examples longer and shorter than the window, straddling key blocks and row pairs.
  struct Case {
    Shape s;
    std::vector<uint32_t> lengths;
  };
  const Case cases[] = {{gqa(2, 23, 6, 2, 8, 4), {5, 11, 1, 6, 13, 4}},
                        {gqa(1, 40, 9, 3, 64, 6, 0.125f), {17, 3, 9, 8}},
                        {gqa(2, 32, 4, 4, 16, 10), {32, 2, 30}}};
  for (const Case& c : cases) {
    DYNAMIC_SECTION(name(c.s)) {
      const auto pos = pack(c.lengths, c.s.B, c.s.T);
      const Io io = random_io(c.s, 400 + c.s.T);
      const Result want = reference(c.s, io, pos);
      std::vector<Result> got;
      for (const DeviceQuirks& q : test::attention_variants()) {
        got.push_back(gpu(c.s, io, q, pos));
        require_close(got.back(), want, name(c.s) + " packed " + variant_name(q));
      }
      for (const Result& r : got) require_same_bits(r, got[0]);
    }
  }
}

TEST_CASE("a window of T keys or more gives the unwindowed kernels' bytes") {
  const Shape plain = gqa(2, 23, 6, 2, 8, 0);
  const Io io = random_io(plain, 17);
  std::vector<uint32_t> pos(std::size_t(plain.B) * plain.T);
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = uint32_t(i % 11);  // examples of 11
  for (const DeviceQuirks& q : test::attention_variants()) {
    INFO(variant_name(q));
    const Result a = gpu(plain, io, q), ap = gpu(plain, io, q, pos);
    for (uint32_t w : {23u, 24u, 1000u, 0xFFFFFFFFu}) {
      INFO("window " << w);
      Shape wide = plain;
      wide.window = w;
      require_same_bits(gpu(wide, io, q), a);
      require_same_bits(gpu(wide, io, q, pos), ap);
    }
  }
}

TEST_CASE("windowed attention never reads the key blocks outside the windows") {
  // T = 72, window 8. NaN in every tensor at positions 0..15 and 56..71: queries 24..55 see
  // keys 17..55 only, and keys 24..47 are seen by queries 24..54 only, so their results are
  // finite and right. Masked rather than skipped, a NaN read would poison them (0 * NaN): the
  // forward and dq must start at the window, dk and dv stop at its end.
  const Shape s = gqa(1, 72, 4, 2, 8, 8);
  Io io = random_io(s, 23);
  const Result clean = reference(s, io);
  const std::size_t qw = s.C, kw = s.KV * (s.C / s.NH);
  const float nan = std::nanf("");
  for (std::size_t t = 0; t < s.T; ++t) {
    if (t >= 16 && t < 56) continue;
    for (std::size_t i = 0; i < qw; ++i) io.q[t * qw + i] = io.dout[t * qw + i] = nan;
    for (std::size_t i = 0; i < kw; ++i) io.k[t * kw + i] = io.v[t * kw + i] = nan;
  }
  auto rows = [](const std::vector<float>& x, std::size_t width, std::size_t t0, std::size_t t1) {
    return std::vector<float>(x.begin() + std::ptrdiff_t(t0 * width),
                              x.begin() + std::ptrdiff_t(t1 * width));
  };
  for (const DeviceQuirks& q : test::attention_variants()) {
    INFO(variant_name(q));
    const Result g = gpu(s, io, q);
    const auto check = [&](const std::vector<float>& got, const std::vector<float>& want,
                           std::size_t width, std::size_t t0, std::size_t t1, const char* what) {
      test::require_close_to(rows(got, width, t0, t1), rows(want, width, t0, t1), norm_mag(want),
                             1e-5, what);
    };
    check(g.out, clean.out, qw, 24, 56, "out");
    check(g.dq, clean.dq, qw, 24, 56, "dq");
    check(g.dk, clean.dk, kw, 24, 48, "dk");
    check(g.dv, clean.dv, kw, 24, 48, "dv");
    for (std::size_t h = 0; h < s.NH; ++h)
      for (std::size_t t = 24; t < 56; ++t)
        REQUIRE(g.lse[h * s.T + t] == Approx(clean.lse[h * s.T + t]).margin(1e-5));
  }
}

TEST_CASE("GPT-2's fused qkv takes a window and a scale too") {
  const Shape s{2, 29, 48, 3, 0, 6, 0.2f};  // 3 heads of 16
  const std::size_t n = std::size_t(s.B) * s.T * s.C;
  const auto qkv = test::random_floats(3 * n, 81), dout = test::random_floats(n, 82);
  std::vector<float> want_out, want_lse, want_dqkv;
  ref::attention_forward(want_out, want_lse, qkv, s.B, s.T, s.C, s.NH, {}, {6, 0.2});
  ref::attention_backward(want_dqkv, dout, qkv, s.B, s.T, s.C, s.NH, {}, {6, 0.2});
  for (const DeviceQuirks& q : test::attention_variants()) {
    INFO(variant_name(q));
    Buffer x = test::upload_buffer(qkv, "qkv"), d = test::upload_buffer(dout, "dout");
    Buffer out = test::garbage_buffer<float>(n, "out");
    Buffer lse = test::garbage_buffer<float>(lse_size(s), "lse");
    Buffer dx = test::garbage_buffer<float>(3 * n, "dqkv");
    test::run_once({kernels::attention_forward(q, s, x.whole(), out.whole(), lse.whole()),
                    kernels::attention_backward(q, s, d.whole(), x.whole(), out.whole(),
                                                lse.whole(), dx.whole(), GradWrite::overwrite)});
    test::require_close_to(test::read<float>(out, n), want_out, norm_mag(want_out), 1e-5, "out");
    test::require_close_to(test::read<float>(lse, lse_size(s)), want_lse,
                           std::vector<double>(want_lse.size(), 1.0), 1e-5, "lse");
    test::require_close_to(test::read<float>(dx, 3 * n), want_dqkv, norm_mag(want_dqkv), 1e-5,
                           "dqkv");
  }
}

TEST_CASE("the CPU driver's loop budget counts the keys a window visits") {
  const auto vs = test::attention_variants();
  const DeviceQuirks &cpu = vs[0], &texels = vs[2];
  const auto backward = [](const DeviceQuirks& q, const Shape& s) {
    return kernels::gqa_attention_backward(q, s, {}, {}, {}, {}, {}, {}, {}, {}, {},
                                           GradWrite::overwrite);
  };
  // Storage kernels loop over the head too: T = 1024 at head size 128 with two query heads per
  // key/value head is past llvmpipe's 65,535 iterations, a window of 512 keys within them.
  REQUIRE_THROWS_AS(backward(cpu, gqa(1, 1024, 2, 1, 128, 0)), std::invalid_argument);
  REQUIRE_NOTHROW(backward(cpu, gqa(1, 1024, 2, 1, 128, 512)));
  // The texel kernels unroll their head loops: only the key (query) loops count, so Gemma 3
  // 1B's attention (4 query heads over 1 of 256) runs at T = 2048 with or without its window.
  REQUIRE_NOTHROW(backward(texels, gqa(1, 2048, 4, 1, 256, 0)));
  REQUIRE_NOTHROW(backward(texels, gqa(1, 2048, 4, 1, 256, 512)));
  REQUIRE_THROWS_AS(backward(texels, gqa(1, 16384, 4, 1, 256, 0)), std::invalid_argument);
  REQUIRE_NOTHROW(backward(texels, gqa(1, 16384, 4, 1, 256, 512)));
}

TEST_CASE("texel attention past the storage kernels' loop budget matches the reference") {
  // A dk/dv row loops over 2 x 1024 queries: ~70,000 iterations if the head loops counted (the
  // storage kernels' budget refuses it), 2,048 for the unrolled texel kernels. Were the head
  // loops counted by llvmpipe, key 0's rows would stop early and differ.
  const DeviceQuirks texels = test::attention_variants()[2];
  for (uint32_t window : {0u, 700u}) {
    const Shape s = gqa(1, 1024, 2, 1, 128, window);
    const Io io = random_io(s, 91);
    require_close(gpu(s, io, texels), reference(s, io), name(s) + " texels");
  }
}

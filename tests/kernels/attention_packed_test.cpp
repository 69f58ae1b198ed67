// Packed rows (several examples to a row, base/row_positions.h): block-diagonal causal attention.
// The reference with positions equals the reference run on each example alone, and its backward
// agrees with finite differences; the kernels (fused and grouped-query, every variant) match it,
// give the plain kernels' bits for plain positions, and never read the tensors of an example
// whose key blocks they skip (NaN there leaves the next example's results finite and right).
#include <catch2/catch.hpp>

#include <bit>
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

struct Qkv {
  std::vector<float> q, k, v;
};
struct Io {
  Qkv in;
  std::vector<float> dout;
};
struct Result {
  std::vector<float> out, lse, dq, dk, dv;
};

Io random_io(const Shape& s, uint64_t seed) {
  return {{test::random_floats(q_size(s), seed), test::random_floats(kv_size(s), seed + 1),
           test::random_floats(kv_size(s), seed + 2)},
          test::random_floats(q_size(s), seed + 3)};
}

Result reference(const Shape& s, const Io& io, const std::vector<uint32_t>& pos) {
  Result r;
  ref::gqa_attention_forward(r.out, r.lse, io.in.q, io.in.k, io.in.v, dims(s), pos);
  ref::gqa_attention_backward(r.dq, r.dk, r.dv, io.dout, io.in.q, io.in.k, io.in.v, dims(s), pos);
  return r;
}

// Forward, then backward on its outputs; `pos` empty runs the plain causal kernels.
Result gpu(const Shape& s, const Io& io, const std::vector<uint32_t>& pos, const DeviceQuirks& q) {
  Buffer qb = test::upload_buffer(io.in.q, "q"), kb = test::upload_buffer(io.in.k, "k"),
         vb = test::upload_buffer(io.in.v, "v"), db = test::upload_buffer(io.dout, "dout");
  Buffer out = test::garbage_buffer<float>(q_size(s), "out");
  Buffer lse = test::garbage_buffer<float>(lse_size(s), "lse");
  Buffer dq = test::garbage_buffer<float>(q_size(s), "dq");
  Buffer dk = test::garbage_buffer<float>(kv_size(s), "dk");
  Buffer dv = test::garbage_buffer<float>(kv_size(s), "dv");
  std::vector<uint32_t> unused{0};
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

void require_close(const Result& g, const Result& want, const char* what) {
  INFO(what);
  test::require_close_to(g.out, want.out, norm_mag(want.out), 1e-5, "out");
  test::require_close_to(g.lse, want.lse, std::vector<double>(want.lse.size(), 1.0), 1e-5, "lse");
  test::require_close_to(g.dq, want.dq, norm_mag(want.dq), 1e-5, "dq");
  test::require_close_to(g.dk, want.dk, norm_mag(want.dk), 1e-5, "dk");
  test::require_close_to(g.dv, want.dv, norm_mag(want.dv), 1e-5, "dv");
}

// Copies rows [t0, t0 + n) of batch b of a [B,T,W] tensor into a [1,n,W] one.
std::vector<float> rows_of(const std::vector<float>& x, const Shape& s, std::size_t width,
                           std::size_t b, std::size_t t0, std::size_t n) {
  const auto first = x.begin() + std::ptrdiff_t((b * s.T + t0) * width);
  return {first, first + std::ptrdiff_t(n * width)};
}

}  // namespace

TEST_CASE("packed attention reference equals each example attended alone") {
  const Shape s = gqa(2, 16, 4, 2, 4);
  const std::vector<uint32_t> lengths = {5, 7, 3, 9, 6};
  const auto pos = pack(lengths, s.B, s.T);
  const Io io = random_io(s, 11);
  const Result packed = reference(s, io, pos);
  const std::size_t D = s.C / s.NH, qw = s.C, kw = s.KV * D;
  std::size_t b = 0, t0 = 0;
  for (uint32_t n : lengths) {
    if (t0 + n > s.T) ++b, t0 = 0;
    const Shape one = gqa(1, n, s.NH, s.KV, D);
    const Io alone{{rows_of(io.in.q, s, qw, b, t0, n), rows_of(io.in.k, s, kw, b, t0, n),
                    rows_of(io.in.v, s, kw, b, t0, n)},
                   rows_of(io.dout, s, qw, b, t0, n)};
    const Result r = reference(one, alone, {});
    REQUIRE(rows_of(packed.out, s, qw, b, t0, n) == r.out);
    REQUIRE(rows_of(packed.dq, s, qw, b, t0, n) == r.dq);
    REQUIRE(rows_of(packed.dk, s, kw, b, t0, n) == r.dk);
    REQUIRE(rows_of(packed.dv, s, kw, b, t0, n) == r.dv);
    for (std::size_t h = 0; h < s.NH; ++h)
      for (std::size_t t = 0; t < n; ++t)
        REQUIRE(packed.lse[(b * s.NH + h) * s.T + t0 + t] == r.lse[h * n + t]);
    t0 += n;
  }
}

TEST_CASE("packed attention reference backward agrees with finite differences in double") {
  const Shape s = gqa(1, 9, 2, 1, 4);
  const std::vector<uint32_t> pos = {0, 1, 2, 0, 1, 2, 3, 0, 1};
  const auto n = dims(s);
  std::vector<double> q = test::random_doubles(q_size(s), 3),
                      k = test::random_doubles(kv_size(s), 4),
                      v = test::random_doubles(kv_size(s), 5);
  const auto r = test::random_doubles(q_size(s), 6);
  std::vector<double> dq, dk, dv;
  ref::gqa_attention_backward(dq, dk, dv, r, q, k, v, n, pos);
  auto loss = [&] {
    std::vector<double> out, lse;
    ref::gqa_attention_forward(out, lse, q, k, v, n, pos);
    return test::weighted_sum(out, r);
  };
  test::require_matches_finite_differences(loss, q, dq, "dq");
  test::require_matches_finite_differences(loss, k, dk, "dk");
  test::require_matches_finite_differences(loss, v, dv, "dv");
}

TEST_CASE("packed attention kernels match the block-diagonal reference in every variant") {
  // Examples straddling key blocks (8) and row pairs, one longer than a block, a one-token one;
  // SmolLM2's 9 heads over 3 at head size 64; multi-head (KV = NH) with a whole-row example.
  struct Case {
    Shape s;
    std::vector<uint32_t> lengths;
  };
  const Case cases[] = {{gqa(2, 23, 6, 2, 8), {5, 11, 1, 6, 13, 4}},
                        {gqa(1, 40, 9, 3, 64), {17, 3, 9, 8}},
                        {gqa(2, 32, 4, 4, 16), {32, 2, 30}}};
  for (const Case& c : cases) {
    const auto pos = pack(c.lengths, c.s.B, c.s.T);
    const Io io = random_io(c.s, 100 + c.s.T);
    const Result want = reference(c.s, io, pos);
    std::vector<Result> got;
    for (const DeviceQuirks& q : test::attention_variants()) {
      INFO("T " << c.s.T << " barriers_are_expensive " << q.barriers_are_expensive << " texels "
                << q.texel_fetch_beats_storage_loads);
      got.push_back(gpu(c.s, io, pos, q));
      require_close(got.back(), want, "packed");
    }
    // Blocks and row pairs are laid out alike in every variant: the same bits.
    for (const Result& r : got) {
      REQUIRE(test::bit_identical(r.out, got[0].out));
      REQUIRE(test::bit_identical(r.lse, got[0].lse));
      REQUIRE(test::bit_identical(r.dq, got[0].dq));
      REQUIRE(test::bit_identical(r.dk, got[0].dk));
      REQUIRE(test::bit_identical(r.dv, got[0].dv));
    }
  }
}

TEST_CASE("packed attention with one example a row gives the plain causal kernels' bits") {
  const Shape s = gqa(2, 23, 6, 2, 8);
  std::vector<uint32_t> plain(std::size_t(s.B) * s.T);
  for (std::size_t i = 0; i < plain.size(); ++i) plain[i] = uint32_t(i % s.T);
  const Io io = random_io(s, 7);
  for (const DeviceQuirks& q : test::attention_variants()) {
    const Result a = gpu(s, io, plain, q), b = gpu(s, io, {}, q);
    REQUIRE(test::bit_identical(a.out, b.out));
    REQUIRE(test::bit_identical(a.lse, b.lse));
    REQUIRE(test::bit_identical(a.dq, b.dq));
    REQUIRE(test::bit_identical(a.dk, b.dk));
    REQUIRE(test::bit_identical(a.dv, b.dv));
  }
}

TEST_CASE("packed attention never reads the key blocks of an earlier example") {
  // Row 0: an example of 16 tokens (two whole key blocks), then one of 16. NaN in every tensor of
  // the first example reaches nothing of the second: the kernels skip its blocks rather than
  // mask them (a masked read of NaN would still poison the sums).
  const Shape s = gqa(1, 32, 4, 2, 8);
  std::vector<uint32_t> pos(32);
  for (uint32_t t = 0; t < 32; ++t) pos[t] = t % 16;
  Io io = random_io(s, 21);
  const Result clean = reference(s, io, pos);
  const float nan = std::nanf("");
  const std::size_t half_q = q_size(s) / 2, half_kv = kv_size(s) / 2;
  for (std::size_t i = 0; i < half_q; ++i) io.in.q[i] = io.dout[i] = nan;
  for (std::size_t i = 0; i < half_kv; ++i) io.in.k[i] = io.in.v[i] = nan;
  for (const DeviceQuirks& q : test::attention_variants()) {
    INFO("barriers_are_expensive " << q.barriers_are_expensive << " texels "
                                   << q.texel_fetch_beats_storage_loads);
    const Result g = gpu(s, io, pos, q);
    auto second = [](const std::vector<float>& x) {
      return std::vector<float>(x.begin() + std::ptrdiff_t(x.size() / 2), x.end());
    };
    test::require_close_to(second(g.out), second(clean.out), norm_mag(clean.out), 1e-5, "out");
    test::require_close_to(second(g.dq), second(clean.dq), norm_mag(clean.dq), 1e-5, "dq");
    test::require_close_to(second(g.dk), second(clean.dk), norm_mag(clean.dk), 1e-5, "dk");
    test::require_close_to(second(g.dv), second(clean.dv), norm_mag(clean.dv), 1e-5, "dv");
    for (std::size_t h = 0; h < s.NH; ++h)
      for (std::size_t t = 16; t < 32; ++t)
        REQUIRE(g.lse[h * s.T + t] == Approx(clean.lse[h * s.T + t]).margin(1e-5));
  }
}

// Tensors larger than one storage-buffer binding (GPT-2's tied head and token embedding against
// lavapipe's 128 MiB) are bound in pieces. Here the pieces are forced on small shapes by a small
// DeviceQuirks::max_binding_bytes, and every split kernel is compared with its unsplit dispatch:
// the head's logits, dW and an overwritten dinp bit for bit, an accumulated dinp within rounding;
// AdamW bit for bit; the gradient norm within rounding and bit-identical run to run.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "runtime/kernels/binding_pieces.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/matmul_backward.h"
#include "runtime/kernels/optimizer.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// The tied head at odd sizes: logits[M,V] = x[M,K] · W[V,K]ᵀ. Rows of W are 192 bytes, so pieces
// start every 4 rows (256-byte alignment); a 40-row limit gives pieces of 40, 40 and 21 rows.
constexpr uint32_t M = 37, V = 101, K = 48;
constexpr uint64_t kRowBytes = K * sizeof(float);
constexpr uint64_t kLimit = 40 * kRowBytes;

DeviceQuirks with_limit(bool cpu_tiles, uint64_t limit) {
  DeviceQuirks q = test::device().plan().quirks;
  q.barriers_are_expensive = cpu_tiles;
  q.max_binding_bytes = limit;
  return q;
}

kernels::MatmulShape head_shape() {
  return {M, V, K, kernels::WeightLayout::out_in};
}

// Every binding the split dispatches make of `whole` is at most the limit and 256-byte aligned
// relative to its start; together they cover it.
void require_pieces_of(const std::vector<Dispatch>& ds, std::size_t binding, const Buffer& whole,
                       uint64_t bytes) {
  uint64_t covered = 0;
  for (const Dispatch& d : ds) {
    const BufferSlice& s = d.bindings.at(binding).slice;
    REQUIRE(s.buffer == whole.handle());
    REQUIRE(s.size <= kLimit);
    REQUIRE(s.offset == covered);
    REQUIRE(s.offset % 256 == 0);
    covered += s.size;
  }
  REQUIRE(covered == bytes);
}

std::vector<float> run_forward(const DeviceQuirks& q, bool bias, std::size_t* dispatches) {
  const auto x = test::random_floats(size_t(M) * K, 1), w = test::random_floats(size_t(V) * K, 2);
  const auto b = test::random_floats(V, 3);
  Buffer dx = test::upload_buffer(x, "x"), dw = test::upload_buffer(w, "w");
  Buffer db = test::upload_buffer(b, "bias");
  Buffer out = test::garbage_buffer<float>(size_t(M) * V, "logits");
  auto ds = kernels::matmul_forward_pieces(q, head_shape(), dx.whole(), dw.whole(),
                                           bias ? db.whole() : BufferSlice{}, out.whole());
  *dispatches = ds.size();
  if (ds.size() > 1) require_pieces_of(ds, 1, dw, w.size() * sizeof(float));
  test::run_once(std::move(ds));
  return test::read<float>(out, size_t(M) * V);
}

}  // namespace

TEST_CASE("the tied head's forward in weight pieces gives the unsplit logits bit for bit") {
  for (bool cpu_tiles : {true, false})
    for (bool bias : {false, true}) {
      DYNAMIC_SECTION("cpu tiles " << cpu_tiles << " bias " << bias) {
        std::size_t whole_n = 0, split_n = 0;
        const auto whole = run_forward(with_limit(cpu_tiles, 0), bias, &whole_n);
        const auto split = run_forward(with_limit(cpu_tiles, kLimit), bias, &split_n);
        REQUIRE(whole_n == 1);
        REQUIRE(split_n == 3);
        for (float v : split) REQUIRE(std::isfinite(v));  // no column left as garbage (NaN)
        REQUIRE(test::bit_identical(whole, split));
      }
    }
}

TEST_CASE("a weight that fits one binding is one dispatch, the unsplit one") {
  // The limit exactly at W's size: still one piece, byte for byte matmul_forward's dispatch.
  for (bool cpu_tiles : {true, false}) {
    const DeviceQuirks q = with_limit(cpu_tiles, uint64_t(V) * kRowBytes);
    Buffer b = test::garbage_buffer<float>(size_t(V) * K + size_t(M) * V, "b");
    const auto ds =
        kernels::matmul_forward_pieces(q, head_shape(), b.whole(), b.whole(), {}, b.whole());
    const Dispatch one =
        kernels::matmul_forward(q, head_shape(), b.whole(), b.whole(), {}, b.whole());
    REQUIRE(ds.size() == 1);
    REQUIRE(ds[0].kernel == one.kernel);
    REQUIRE(ds[0].push == one.push);
    REQUIRE(ds[0].groups == one.groups);
    REQUIRE(ds[0].bindings.at(1).slice.size == b.size());
    const auto bw = kernels::matmul_backward_input_pieces(q, head_shape(), b.whole(), b.whole(),
                                                          b.whole(), kernels::GradWrite::overwrite);
    REQUIRE(bw.size() == 1);
    REQUIRE(bw[0].push == kernels::matmul_backward_input(q, head_shape(), b.whole(), b.whole(),
                                                         b.whole(), kernels::GradWrite::overwrite)
                              .push);
  }
}

TEST_CASE("an (in, out) weight is never split: its column pieces would not be contiguous") {
  Buffer b = test::garbage_buffer<float>(16, "b");
  const kernels::MatmulShape s{M, V, K, kernels::WeightLayout::in_out};
  REQUIRE(kernels::weight_pieces(with_limit(true, kLimit), s).size() == 1);
  REQUIRE(kernels::weight_pieces(with_limit(true, kLimit), head_shape()).size() == 3);
}

namespace {

struct HeadGrads {
  std::vector<float> dx, dw;
  std::size_t dispatches = 0;
};

// dx[M,K] and dW[V,K] of the head from dlogits[M,V], onto `init` (accumulate) or garbage.
HeadGrads run_backward(const DeviceQuirks& q, kernels::GradWrite mode) {
  const auto dlogits = test::random_floats(size_t(M) * V, 4);
  const auto x = test::random_floats(size_t(M) * K, 5), w = test::random_floats(size_t(V) * K, 6);
  const bool acc = mode == kernels::GradWrite::accumulate;
  Buffer d_dlogits = test::upload_buffer(dlogits, "dlogits");
  Buffer d_x = test::upload_buffer(x, "x"), d_w = test::upload_buffer(w, "w");
  Buffer d_dx = acc ? test::upload_buffer(test::random_floats(size_t(M) * K, 7), "dx")
                    : test::garbage_buffer<float>(size_t(M) * K, "dx");
  Buffer d_dw = acc ? test::upload_buffer(test::random_floats(size_t(V) * K, 8), "dw")
                    : test::garbage_buffer<float>(size_t(V) * K, "dw");
  auto in = kernels::matmul_backward_input_pieces(q, head_shape(), d_dlogits.whole(), d_w.whole(),
                                                  d_dx.whole(), mode);
  auto wt = kernels::matmul_backward_weight_pieces(q, head_shape(), d_dlogits.whole(), d_x.whole(),
                                                   d_dw.whole(), mode);
  REQUIRE(in.size() == wt.size());
  if (in.size() > 1) {
    require_pieces_of(in, 1, d_w, w.size() * sizeof(float));
    require_pieces_of(wt, 2, d_dw, w.size() * sizeof(float));
  }
  HeadGrads g;
  g.dispatches = in.size();
  in.insert(in.end(), wt.begin(), wt.end());
  test::run_once(std::move(in));
  g.dx = test::read<float>(d_dx, size_t(M) * K);
  g.dw = test::read<float>(d_dw, size_t(V) * K);
  return g;
}

}  // namespace

TEST_CASE("the tied head's backward in weight pieces matches the unsplit gradients") {
  for (bool cpu_tiles : {true, false})
    for (auto mode : {kernels::GradWrite::overwrite, kernels::GradWrite::accumulate}) {
      DYNAMIC_SECTION("cpu tiles " << cpu_tiles << " accumulate " << int(mode)) {
        const HeadGrads whole = run_backward(with_limit(cpu_tiles, 0), mode);
        const HeadGrads split = run_backward(with_limit(cpu_tiles, kLimit), mode);
        REQUIRE(whole.dispatches == 1);
        REQUIRE(split.dispatches == 3);
        // dW: disjoint rows, each computed as unsplit.
        REQUIRE(test::bit_identical(whole.dw, split.dw));
        if (mode == kernels::GradWrite::overwrite) {
          // Later pieces continue the sum over V in the unsplit order.
          REQUIRE(test::bit_identical(whole.dx, split.dx));
        } else {
          // old + (Σ over pieces, continued) against old + Σ: the same V + 1 terms, each in
          // [-1, 1], rounded at other points: |error| ≤ (V + 1) · 2⁻²⁴ · (V + 1) ≈ 6e-4 at worst,
          // ~√(V + 1) · 2⁻²⁴ · (V + 1) ≈ 6e-5 in practice.
          test::require_close(split.dx, test::to_double(whole.dx), 0, 1e-4, "dx accumulated");
        }
      }
    }
}

namespace {

struct AdamWRun {
  std::vector<float> p, m, v;
  std::size_t dispatches = 0;
};

AdamWRun run_adamw(uint64_t limit, uint32_t n) {
  const DeviceQuirks q = with_limit(true, limit);
  Buffer p = test::upload_buffer(test::random_floats(n, 11), "p");
  Buffer g = test::upload_buffer(test::random_floats(n, 12), "g");
  Buffer m = test::upload_buffer(test::random_floats(n, 13, -0.1f, 0.1f), "m");
  Buffer v = test::upload_buffer(test::random_floats(n, 14, 0.0f, 0.01f), "v");
  Buffer hyper =
      test::upload_buffer(std::vector<push::AdamWHyper>{kernels::adamw_hyper({}, 2)}, "hyper");
  Buffer clip = test::upload_buffer(std::vector<push::GradNormResult>{{3.0f, 0.33f}}, "clip");
  auto ds = kernels::adamw_pieces(q, p.whole(), g.whole(), m.whole(), v.whole(), hyper.whole(),
                                  clip.whole(), n, true);
  AdamWRun r;
  r.dispatches = ds.size();
  if (ds.size() > 1) {
    const Buffer* bound[] = {&p, &g, &m, &v};  // bindings 0-3
    for (std::size_t b = 0; b < 4; ++b) require_pieces_of(ds, b, *bound[b], n * 4ull);
  }
  test::run_once(std::move(ds));
  r.p = test::read<float>(p, n);
  r.m = test::read<float>(m, n);
  r.v = test::read<float>(v, n);
  return r;
}

}  // namespace

TEST_CASE("AdamW in element pieces gives the unsplit update bit for bit") {
  const uint32_t n = 10'007;  // 256-byte pieces of 64 floats: kLimit = 7680 bytes = 1920 floats
  const AdamWRun whole = run_adamw(0, n), split = run_adamw(kLimit, n);
  REQUIRE(whole.dispatches == 1);
  REQUIRE(split.dispatches == 6);  // 5 × 1920 + 407
  REQUIRE(test::bit_identical(whole.p, split.p));
  REQUIRE(test::bit_identical(whole.m, split.m));
  REQUIRE(test::bit_identical(whole.v, split.v));
}

namespace {

push::GradNormResult run_norm(uint64_t limit, const std::vector<std::vector<float>>& grads,
                              std::size_t* dispatches) {
  const DeviceQuirks q = with_limit(true, limit);
  std::vector<Buffer> bufs;
  std::vector<BufferSlice> slices;
  std::vector<uint64_t> counts;
  for (const auto& g : grads) {
    bufs.push_back(test::upload_buffer(g, "grad"));
    counts.push_back(g.size());
  }
  for (const Buffer& b : bufs) slices.push_back(b.whole());
  Buffer partials =
      test::garbage_buffer<float>(kernels::grad_norm_partials_floats(q, counts), "partials");
  Buffer out = test::garbage_buffer<push::GradNormResult>(1, "norm");
  auto ds = kernels::grad_norm(q, slices, counts, partials.whole(), 1.0f, out.whole());
  *dispatches = ds.size();
  for (const Dispatch& d : ds)
    for (const Binding& b : d.bindings) REQUIRE(b.slice.size <= (limit ? limit : b.slice.size));
  test::run_once(std::move(ds));
  return test::read<push::GradNormResult>(out, 1)[0];
}

}  // namespace

TEST_CASE("the gradient norm over element pieces matches the unsplit norm, run to run exactly") {
  const std::vector<std::vector<float>> grads = {test::random_floats(300'007, 21),
                                                 test::random_floats(77, 22)};
  double exact = 0;
  for (const auto& g : grads)
    for (float x : g) exact += double(x) * x;
  exact = std::sqrt(exact);
  std::size_t whole_n = 0, split_n = 0, again_n = 0;
  // 1.2 MB in pieces of 64 KiB: 19 partial dispatches for the large tensor, 1 for the small.
  const uint64_t limit = 64 << 10;
  const auto whole = run_norm(0, grads, &whole_n);
  const auto split = run_norm(limit, grads, &split_n);
  const auto again = run_norm(limit, grads, &again_n);
  REQUIRE(whole_n == 3);
  REQUIRE(split_n == 19 + 1 + 1);
  // Both are compensated sums of the same squares in other groupings: within float rounding of
  // the double-precision norm.
  REQUIRE(std::abs(split.norm - exact) <= 2e-7 * exact);
  REQUIRE(std::abs(whole.norm - exact) <= 2e-7 * exact);
  REQUIRE(std::memcmp(&split, &again, sizeof split) == 0);
}

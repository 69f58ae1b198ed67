// A long reduction run in blocks gives the bits of the single dispatch it replaces (and of the
// storage-buffer kernels): dinp of an (out, in) weight with N odd (X_MODE 3, the tied head's
// dlogits rows) and N a multiple of 4 (X_MODE 0), overwritten and continuing a sum, for blocks
// that divide R and blocks that leave a short last one, with W bound whole and in pieces.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "matmul_texels_params.h"
#include "runtime/kernels/matmul_backward.h"
#include "runtime/kernels/matmul_reduction_blocks.h"
#include "runtime/kernels/matmul_texels.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;
using kernels::WeightLayout;

namespace {

DeviceQuirks quirks(bool texels) {
  DeviceQuirks q = test::device().plan().quirks;
  q.barriers_are_expensive = true;
  q.texel_fetch_beats_storage_loads = texels;
  q.matmul_tiling = default_matmul_tiling(8);
  return q;
}

struct Slices {
  BufferSlice dout, w, dinp;
};

// dinp after the dispatches `build` makes for fixed random operands of dinp[M,K] (+)= dout[M,N] ·
// W[N,K]; dinp starts random so a continued sum starts from something.
template <class Build>
std::vector<float> run(const kernels::MatmulShape& s, Build build) {
  const std::size_t dinp_n = std::size_t(s.M) * s.K;
  Buffer dout = test::upload_buffer(test::random_floats(std::size_t(s.M) * s.N, 1), "dout");
  Buffer w = test::upload_buffer(test::random_floats(std::size_t(s.N) * s.K, 2), "w");
  Buffer dinp = test::upload_buffer(test::random_floats(dinp_n, 3), "dinp");
  test::run_once(build(Slices{dout.whole(), w.whole(), dinp.whole()}));
  return test::read<float>(dinp, dinp_n);
}

// The texel kernel's single dinp dispatch for s.
Dispatch whole(const DeviceQuirks& q, const kernels::MatmulShape& s, const Slices& o,
               uint32_t accumulate) {
  auto d = kernels::matmul_backward_input_texels(q, s, o.dout, o.w, o.dinp, accumulate);
  if (!d) throw std::logic_error("no texel dispatch for this shape");
  return *d;
}

uint32_t accumulate_of(const Dispatch& d) {
  push::MatmulTexelsParams p{};
  std::memcpy(&p, d.push.data(), sizeof p);
  return p.accumulate;
}

}  // namespace

TEST_CASE("a reduction in blocks gives the single dispatch's bits") {
  // M = 68: dout's binding is whole vec4 texels, so N = 101 reads it shifted (X_MODE 3).
  for (uint32_t N : {101u, 103u, 144u})
    for (uint32_t block : {4u, 12u, 32u})
      for (uint32_t acc : {0u, 2u}) {
        const kernels::MatmulShape s{68, N, 40, WeightLayout::out_in};
        INFO("N " << N << " block " << block << " accumulate " << acc);
        const Slices none{};
        const Dispatch d = whole(quirks(true), s, none, acc);
        CHECK(d.spec.at(5) == (N % 4 == 0 ? 0u : 3u));
        const std::vector<Dispatch> blocks = kernels::split_reduction(quirks(true), d, block);
        REQUIRE(blocks.size() == (N + block - 1) / block);
        CHECK(accumulate_of(blocks.front()) == acc);
        CHECK(accumulate_of(blocks.back()) == 2);
        const std::vector<float> want = run(s, [&](const Slices& o) {
          return std::vector<Dispatch>{whole(quirks(true), s, o, acc)};
        });
        const std::vector<float> got = run(s, [&](const Slices& o) {
          return kernels::split_reduction(quirks(true), whole(quirks(true), s, o, acc), block);
        });
        CHECK(test::bit_identical(got, want));
      }
}

TEST_CASE("blocks of a weight bound in pieces give the storage kernels' bits") {
  // 150 rows of 40 floats in pieces of at most 64 rows: blocks of 16 split the first two.
  const kernels::MatmulShape s{68, 150, 40, WeightLayout::out_in};
  DeviceQuirks q = quirks(true);
  q.max_binding_bytes = 64 * 40 * 4;
  DeviceQuirks storage = quirks(false);
  storage.max_binding_bytes = q.max_binding_bytes;
  for (auto mode : {kernels::GradWrite::overwrite, kernels::GradWrite::accumulate}) {
    INFO("mode " << int(mode));
    const std::vector<float> want = run(s, [&](const Slices& o) {
      return kernels::matmul_backward_input_pieces(storage, s, o.dout, o.w, o.dinp, mode);
    });
    auto blocks = [&](const Slices& o) {
      std::vector<Dispatch> ds;
      for (const Dispatch& d :
           kernels::matmul_backward_input_pieces(q, s, o.dout, o.w, o.dinp, mode))
        for (Dispatch& b : kernels::split_reduction(q, d, 16)) ds.push_back(std::move(b));
      return ds;
    };
    // Overwrite: 4 + 4 + 2 blocks (22 rows: one block, too short to split); accumulate adds the
    // first piece's sum to dinp, which blocks cannot continue: that piece stays whole.
    CHECK(blocks(Slices{}).size() == (mode == kernels::GradWrite::overwrite ? 9u : 6u));
    CHECK(test::bit_identical(run(s, blocks), want));
  }
}

TEST_CASE("only the CPU outer kernel along r with a splittable sum is split") {
  const kernels::MatmulShape s{68, 101, 40, WeightLayout::out_in};
  const Slices none{};
  CHECK(kernels::split_reduction(quirks(true), whole(quirks(true), s, none, 1), 8).size() == 1);
  const Dispatch d = whole(quirks(true), s, none, 0);
  CHECK(kernels::split_reduction(quirks(false), d, 8).size() == 1);
  CHECK(kernels::split_reduction(quirks(true), d, 52).size() == 1);  // 101 <= 2 blocks
  CHECK(kernels::split_reduction(quirks(true), d, 48).size() == 3);
  // One band of rows (16, the default tile's) reads each block once anyway: kept whole.
  const kernels::MatmulShape one_band{16, 101, 40, WeightLayout::out_in};
  CHECK(kernels::split_reduction(quirks(true), whole(quirks(true), one_band, none, 0), 8).size() ==
        1);
  CHECK_THROWS_AS(kernels::split_reduction(quirks(true), d, 6), std::invalid_argument);
  // dW reads dout along i (X_MODE 4): its reduction is over tokens, not split.
  const auto dw =
      kernels::matmul_backward_weight_texels(quirks(true), s, none.dout, none.dinp, none.w, 0);
  REQUIRE(dw);
  CHECK(kernels::split_reduction(quirks(true), *dw, 8).size() == 1);
  // A block is about the cache's bytes of Y's rows (40 floats here), whole multiples of 4 rows.
  CHECK(kernels::reduction_block_rows(d, 40 * 4 * 10) == 8);
  CHECK(kernels::reduction_block_rows(d, 1) == 4);
}

// dW (+)= dout^T · inp of an (out, in) weight under q: dout[M,N], inp[M,K], dW[N,K] random.
std::vector<float> weight_grad(const kernels::MatmulShape& s, const DeviceQuirks& q) {
  const std::size_t dw_n = std::size_t(s.N) * s.K;
  Buffer dout = test::upload_buffer(test::random_floats(std::size_t(s.M) * s.N, 1), "dout");
  Buffer inp = test::upload_buffer(test::random_floats(std::size_t(s.M) * s.K, 2), "inp");
  Buffer dw = test::upload_buffer(test::random_floats(dw_n, 3), "dw");
  test::run_once({kernels::matmul_backward_weight(q, s, dout.whole(), inp.whole(), dw.whole(),
                                                  kernels::GradWrite::accumulate)});
  return test::read<float>(dw, dw_n);
}

TEST_CASE("the outer kernel's last R % 4 r give the storage kernels' bits") {
  // dW's reduction is over M: 66 x 102 reads dout as shifted texels (X_MODE 4) with R % 4 = 2,
  // 67 x 144 as aligned ones (X_MODE 1) with R % 4 = 3, 67 x 101 one float at a time (X_MODE 2).
  struct Case {
    uint32_t M, N, mode;
  };
  for (const Case& c : {Case{66, 102, 4}, Case{67, 144, 1}, Case{67, 101, 2}}) {
    INFO(c.M << "x" << c.N);
    const kernels::MatmulShape s{c.M, c.N, 40, WeightLayout::out_in};
    const auto fake = [](uint64_t floats) { return BufferSlice{VK_NULL_HANDLE, 0, floats * 4}; };
    const auto d = kernels::matmul_backward_weight_texels(quirks(true), s, fake(c.M * c.N),
                                                          fake(c.M * 40), fake(c.N * 40), 0);
    REQUIRE(d);
    CHECK(d->spec.at(5) == c.mode);
    CHECK(test::bit_identical(weight_grad(s, quirks(true)), weight_grad(s, quirks(false))));
  }
}

// Hidden by default (a benchmark, not a test): `remat_matmul_reduction_blocks_test "[.bench]"`.
// The tied head's dinp over its first piece of wte (43690 rows, odd-strided dlogits like
// 50257's) whole and in blocks of about 256 KiB, 1 MiB and 4 MiB of wte, alternating, best of
// three each; the head forward over the same piece for scale.
TEST_CASE("the head's dinp in blocks: throughput", "[.bench]") {
  const kernels::MatmulShape s{256, 43690, 768, WeightLayout::out_in};
  const DeviceQuirks q = quirks(true);
  Buffer dout = test::upload_buffer(test::random_floats(std::size_t(s.M) * s.N, 1), "dout");
  Buffer w = test::upload_buffer(test::random_floats(std::size_t(s.N) * s.K, 2), "w");
  Buffer dinp = test::upload_buffer(test::random_floats(std::size_t(s.M) * s.K, 3), "dinp");
  Buffer logits = test::upload_buffer(test::random_floats(std::size_t(s.M) * s.N, 4), "logits");
  const Dispatch d = whole(q, s, Slices{dout.whole(), w.whole(), dinp.whole()}, 0);
  const auto fwd =
      kernels::matmul_forward_texels(q, s, dinp.whole(), w.whole(), {}, logits.whole());
  REQUIRE(fwd);
  struct Variant {
    const char* what;
    std::vector<Dispatch> ds;
    double best = 1e30;
  };
  std::vector<Variant> vs{{"forward", {*fwd}}, {"dinp whole", {d}}};
  for (uint64_t kib : {256, 1024, 4096})
    vs.push_back({kib == 256    ? "dinp 256 KiB"
                  : kib == 1024 ? "dinp 1 MiB"
                                : "dinp 4 MiB",
                  kernels::split_reduction(q, d, kernels::reduction_block_rows(d, kib * 1024))});
  std::vector<std::unique_ptr<Executor>> ex;
  for (Variant& v : vs)
    ex.push_back(std::make_unique<Executor>(test::kernels(), v.ds, ExecutorOptions{true}));
  for (auto& e : ex) e->run();  // compile and warm
  for (int round = 0; round < 3; ++round)
    for (std::size_t i = 0; i < vs.size(); ++i) {
      ex[i]->run();
      double ms = 0;
      for (double t : ex[i]->dispatch_ms()) ms += t;
      vs[i].best = std::min(vs[i].best, ms);
    }
  const double flop = 2.0 * s.M * s.N * s.K;
  for (const Variant& v : vs)
    std::printf("%-14s %3zu dispatches %8.1f ms %6.1f GFLOP/s %5.2fx forward\n", v.what,
                v.ds.size(), v.best, flop / v.best / 1e6, v.best / vs[0].best);
  CHECK(vs[0].best > 0);
}

// Hidden: the head's dW over the same piece (X_MODE 4) with other register tiles, for scale.
TEST_CASE("the head's dW by tile: throughput", "[.bench]") {
  const kernels::MatmulShape s{256, 43690, 768, WeightLayout::out_in};
  Buffer dout = test::upload_buffer(test::random_floats(std::size_t(s.M) * s.N, 1), "dout");
  Buffer inp = test::upload_buffer(test::random_floats(std::size_t(s.M) * s.K, 2), "inp");
  Buffer dw = test::upload_buffer(test::random_floats(std::size_t(s.N) * s.K, 3), "dw");
  const MatmulTile tiles[] = {{16, 2, 8}, {16, 4, 8}, {8, 4, 8}, {16, 1, 8}, {8, 2, 8}, {4, 4, 8}};
  std::vector<std::unique_ptr<Executor>> ex;
  std::vector<double> best;
  for (const MatmulTile& t : tiles) {
    DeviceQuirks q = quirks(true);
    q.matmul_tiling = {t, t, {}};
    const auto d =
        kernels::matmul_backward_weight_texels(q, s, dout.whole(), inp.whole(), dw.whole(), 1);
    REQUIRE(d);
    ex.push_back(std::make_unique<Executor>(test::kernels(), std::vector<Dispatch>{*d},
                                            ExecutorOptions{true}));
    ex.back()->run();
    best.push_back(1e30);
  }
  for (int round = 0; round < 3; ++round)
    for (std::size_t i = 0; i < ex.size(); ++i) {
      ex[i]->run();
      best[i] = std::min(best[i], ex[i]->dispatch_ms()[0]);
    }
  const double flop = 2.0 * s.M * s.N * s.K;
  for (std::size_t i = 0; i < ex.size(); ++i)
    std::printf("dW tile %2ux%u/%-2u %8.1f ms %6.1f GFLOP/s\n", tiles[i].rows, tiles[i].cols,
                tiles[i].wx, best[i], flop / best[i] / 1e6);
  CHECK(best[0] > 0);
}

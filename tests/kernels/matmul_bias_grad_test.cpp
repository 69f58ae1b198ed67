// The bias gradient summed inside the weight gradient's texel dispatch
// (kernels::matmul_backward_weight_bias_pieces, DeviceQuirks::bias_grad_in_weight_grad): one
// dispatch instead of two where W is in_out, with the bits of matmul_backward_weight and
// matmul_backward_bias run separately, overwriting and accumulating, for every outer tile
// candidate, and within float rounding of the reference; elsewhere the two separate dispatches.
#include <catch2/catch.hpp>

#include <cstring>

#include "runtime/kernels/matmul_backward.h"
#include "tests/reference/matmul_backward.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

using kernels::GradWrite;
using kernels::WeightLayout;

struct Grads {
  std::vector<float> dw, dbias;
  std::size_t dispatches = 0;
};

DeviceQuirks texel_quirks(bool fused) {
  DeviceQuirks q = test::device().plan().quirks;
  q.texel_fetch_beats_storage_loads = true;
  q.bias_grad_in_weight_grad = fused;
  return q;
}

// dW and dbias of dout [M,N], inp [M,K] onto `init_dw` / `init_db` (accumulate) or garbage.
Grads run(const DeviceQuirks& q, uint32_t M, uint32_t N, uint32_t K, WeightLayout layout,
          GradWrite mode, const Grads& init) {
  Buffer dout = test::upload_buffer(test::random_floats(size_t(M) * N, 41 + M), "dout");
  Buffer inp = test::upload_buffer(test::random_floats(size_t(M) * K, 42 + K), "inp");
  const std::size_t nw = size_t(K) * N;
  Buffer dw = mode == GradWrite::accumulate ? test::upload_buffer(init.dw, "dw")
                                            : test::garbage_buffer<float>(nw, "dw");
  Buffer db = mode == GradWrite::accumulate ? test::upload_buffer(init.dbias, "dbias")
                                            : test::garbage_buffer<float>(N, "dbias");
  const kernels::MatmulShape s{M, N, K, layout};
  auto ds = kernels::matmul_backward_weight_bias_pieces(q, s, dout.whole(), inp.whole(), dw.whole(),
                                                        mode, db.whole(), mode);
  const std::size_t n = ds.size();
  test::run_once(std::move(ds));
  return {test::read<float>(dw, nw), test::read<float>(db, N), n};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Shape {
  uint32_t M, N, K;
};
// GPT-shaped (tiny's c_fc at B=8 T=64; c_attn at B=3 T=23), M not a multiple of 4, K not a
// multiple of the tile rows or of 4 (X read shifted or one float at a time), a single row.
const Shape kShapes[] = {{512, 512, 128}, {69, 144, 48}, {37, 20, 33}, {5, 12, 20}, {1, 8, 7}};

}  // namespace

TEST_CASE("the fused bias gradient gives the separate kernels' bits in one dispatch") {
  for (const Shape& sh : kShapes) {
    for (GradWrite mode : {GradWrite::overwrite, GradWrite::accumulate}) {
      DYNAMIC_SECTION("M=" << sh.M << " N=" << sh.N << " K=" << sh.K << " accumulate "
                           << int(mode)) {
        const Grads init{test::random_floats(size_t(sh.K) * sh.N, 43),
                         test::random_floats(sh.N, 44)};
        const Grads want =
            run(texel_quirks(false), sh.M, sh.N, sh.K, WeightLayout::in_out, mode, init);
        REQUIRE(want.dispatches == 2);
        // Every outer tile the tuner may choose: the bias row's workgroups follow the tile rows.
        for (const MatmulTile& t : matmul_tile_candidates(TexelMatmul::outer)) {
          INFO("tile " << t.rows << "x" << t.cols << "/" << t.wx);
          DeviceQuirks q = texel_quirks(true);
          q.matmul_tiling.outer = t;
          const Grads got = run(q, sh.M, sh.N, sh.K, WeightLayout::in_out, mode, init);
          REQUIRE(got.dispatches == 1);
          CHECK(same_bits(got.dw, want.dw));
          CHECK(same_bits(got.dbias, want.dbias));
        }
      }
    }
  }
}

TEST_CASE("the fused bias gradient matches the reference") {
  const uint32_t M = 69, N = 144, K = 48;
  const auto dout = test::random_floats(size_t(M) * N, 41 + M);
  const auto inp = test::random_floats(size_t(M) * K, 42 + K);
  const auto w = test::random_floats(size_t(K) * N, 1);
  std::vector<float> dinp, dw, dbias;
  ref::matmul_backward(dinp, dw, dbias, dout, inp, w, M, N, K, ref::WeightLayout::in_out);
  const Grads got =
      run(texel_quirks(true), M, N, K, WeightLayout::in_out, GradWrite::overwrite, {});
  REQUIRE(got.dispatches == 1);
  // Each bias is a sum of M terms of magnitude < 1: a few float roundings of M at most.
  for (uint32_t n = 0; n < N; ++n) {
    INFO("dbias[" << n << "]");
    CHECK(std::abs(got.dbias[n] - dbias[n]) <= 1e-5f * M);
  }
  for (std::size_t i = 0; i < dw.size(); ++i) {
    INFO("dw[" << i << "]");
    CHECK(std::abs(got.dw[i] - dw[i]) <= 1e-5f * M);
  }
}

TEST_CASE("the bias gradient keeps its own dispatch where the texel dW cannot sum it") {
  struct Case {
    const char* name;
    DeviceQuirks q;
    WeightLayout layout;
    uint32_t N;
  };
  DeviceQuirks storage = texel_quirks(true);
  storage.texel_fetch_beats_storage_loads = false;
  const Case cases[] = {
      {"out_in weights: X is dout, whose row sums the kernel does not take", texel_quirks(true),
       WeightLayout::out_in, 144},
      {"storage-buffer kernels (GPUs)", storage, WeightLayout::in_out, 144},
      {"an output width the texel kernel cannot store as vec4", texel_quirks(true),
       WeightLayout::in_out, 7},
      {"the quirk off", texel_quirks(false), WeightLayout::in_out, 144},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      const uint32_t M = 69, K = 48;
      const Grads got = run(c.q, M, c.N, K, c.layout, GradWrite::overwrite, {});
      REQUIRE(got.dispatches == 2);
      std::vector<float> dinp, dw, dbias;
      const auto w = test::random_floats(size_t(K) * c.N, 1);
      ref::matmul_backward(
          dinp, dw, dbias, test::random_floats(size_t(M) * c.N, 41 + M),
          test::random_floats(size_t(M) * K, 42 + K), w, M, c.N, K,
          c.layout == WeightLayout::in_out ? ref::WeightLayout::in_out : ref::WeightLayout::out_in);
      for (uint32_t n = 0; n < c.N; ++n) CHECK(std::abs(got.dbias[n] - dbias[n]) <= 1e-5f * M);
    }
  }
}

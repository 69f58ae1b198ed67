// Token + position embedding: the reference backward against finite differences; the GPU
// kernels bit-exact against the fp32 reference (the kernels add in the reference's order), at
// awkward shapes, GPT-2's vocabulary, with wte split into binding-sized pieces, accumulating,
// with out-of-range tokens, and bit-identical across runs.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>

#include "runtime/kernels/embedding.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/embedding.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

TEST_CASE("embedding reference backward matches finite differences") {
  const std::size_t B = 2, T = 3, C = 4, V = 5, ctx = 4;
  std::vector<uint32_t> tokens = {1, 3, 1, 0, 1, 4};  // repeats, and a row (2) never used
  auto wte = test::random_doubles(V * C, 61), wpe = test::random_doubles(ctx * C, 62);
  auto weights = test::random_doubles(B * T * C, 63);
  std::vector<double> x;
  auto loss = [&] {
    ref::embedding_forward(x, tokens, wte, wpe, B, T, C);
    return test::weighted_sum(x, weights);
  };
  std::vector<double> dwte(V * C), dwpe(ctx * C);
  ref::embedding_backward(dwte, dwpe, tokens, weights, B, T, C, false, false);
  test::require_matches_finite_differences(loss, wte, dwte, "dwte");
  test::require_matches_finite_differences(loss, wpe, dwpe, "dwpe");
}

struct EmbInputs {
  kernels::EmbeddingShape s;
  std::vector<uint32_t> tokens;
  std::vector<float> wte, wpe, dx;
  std::vector<float> dwte0, dwpe0;  // prior gradients when accumulating, else empty
};

EmbInputs make_inputs(kernels::EmbeddingShape s, bool acc_wte, bool acc_wpe) {
  EmbInputs in{s};
  const std::size_t rows = std::size_t(s.B) * s.T;
  in.tokens = test::random_indices(rows, 64 + s.V, s.V);
  // Force repeated tokens, including one repeated within a sequence, and the last row.
  if (rows > 4) in.tokens[rows - 1] = in.tokens[0], in.tokens[2] = in.tokens[1];
  in.tokens[rows / 2] = s.V - 1;
  in.wte = test::random_floats(std::size_t(s.V) * s.C, 65);
  in.wpe = test::random_floats(std::size_t(s.ctx) * s.C, 66);
  in.dx = test::random_floats(rows * s.C, 67);
  if (acc_wte) in.dwte0 = test::random_floats(std::size_t(s.V) * s.C, 68);
  if (acc_wpe) in.dwpe0 = test::random_floats(std::size_t(s.ctx) * s.C, 69);
  return in;
}

struct EmbRun {
  std::vector<float> x, dwte, dwpe;
  std::size_t dispatches = 0;
};

EmbRun run_gpu(const EmbInputs& in, const DeviceQuirks& quirks) {
  const auto& s = in.s;
  const std::size_t rows = std::size_t(s.B) * s.T, nwte = std::size_t(s.V) * s.C,
                    nwpe = std::size_t(s.ctx) * s.C;
  const bool acc_wte = !in.dwte0.empty(), acc_wpe = !in.dwpe0.empty();
  Buffer tokens = test::upload_buffer(in.tokens, "tokens"),
         wte = test::upload_buffer(in.wte, "wte"), wpe = test::upload_buffer(in.wpe, "wpe"),
         dx = test::upload_buffer(in.dx, "dx");
  Buffer x = test::garbage_buffer<float>(rows * s.C, "x");
  Buffer dwte =
      acc_wte ? test::upload_buffer(in.dwte0, "dwte") : test::garbage_buffer<float>(nwte, "dwte");
  Buffer dwpe =
      acc_wpe ? test::upload_buffer(in.dwpe0, "dwpe") : test::garbage_buffer<float>(nwpe, "dwpe");
  auto ds =
      kernels::embedding_forward(quirks, s, tokens.whole(), wte.whole(), wpe.whole(), x.whole());
  auto bw = kernels::embedding_backward(quirks, s, tokens.whole(), dx.whole(), dwte.whole(),
                                        dwpe.whole(), acc_wte, acc_wpe);
  ds.insert(ds.end(), bw.begin(), bw.end());
  EmbRun r;
  r.dispatches = ds.size();
  test::run_once(std::move(ds));
  r.x = test::read<float>(x, rows * s.C);
  r.dwte = test::read<float>(dwte, nwte);
  r.dwpe = test::read<float>(dwpe, nwpe);
  return r;
}

void check_exact(const EmbInputs& in, const EmbRun& g) {
  const auto& s = in.s;
  std::vector<float> x;
  std::vector<float> dwte =
      in.dwte0.empty() ? std::vector<float>(std::size_t(s.V) * s.C) : in.dwte0;
  std::vector<float> dwpe =
      in.dwpe0.empty() ? std::vector<float>(std::size_t(s.ctx) * s.C) : in.dwpe0;
  ref::embedding_forward(x, in.tokens, in.wte, in.wpe, s.B, s.T, s.C);
  ref::embedding_backward(dwte, dwpe, in.tokens, in.dx, s.B, s.T, s.C, !in.dwte0.empty(),
                          !in.dwpe0.empty());
  REQUIRE(test::bit_identical(g.x, x));
  REQUIRE(test::bit_identical(g.dwte, dwte));
  REQUIRE(test::bit_identical(g.dwpe, dwpe));
}

const DeviceQuirks& quirks() {
  return test::device().plan().quirks;
}

TEST_CASE("embedding GPU forward and backward equal the fp32 reference bit for bit") {
  for (auto s :
       {kernels::EmbeddingShape{3, 23, 48, 101, 32}, kernels::EmbeddingShape{1, 1, 1, 1, 1},
        kernels::EmbeddingShape{2, 5, 48, 50257, 8},
        kernels::EmbeddingShape{4, 64, 768, 1024, 128}}) {
    DYNAMIC_SECTION("B " << s.B << " T " << s.T << " C " << s.C << " V " << s.V << " ctx "
                         << s.ctx) {
      auto in = make_inputs(s, false, false);
      auto g = run_gpu(in, quirks());
      check_exact(in, g);
      // Overwriting zeroes dwpe rows past T.
      for (std::size_t i = std::size_t(s.T) * s.C; i < g.dwpe.size(); ++i)
        REQUIRE(g.dwpe[i] == 0.0f);
    }
  }
}

TEST_CASE("embedding backward accumulates, each table by its own flag") {
  for (int flags = 1; flags < 4; ++flags) {
    DYNAMIC_SECTION("accumulate wte " << (flags & 1) << " wpe " << (flags >> 1)) {
      auto in = make_inputs({3, 23, 48, 101, 32}, flags & 1, flags & 2);
      check_exact(in, run_gpu(in, quirks()));
    }
  }
}

TEST_CASE("embedding through texel views gives the storage kernels' bits") {
  DeviceQuirks storage = quirks(), texels = quirks();
  storage.texel_fetch_beats_storage_loads = false;
  texels.texel_fetch_beats_storage_loads = true;
  const kernels::EmbeddingShape s{3, 23, 48, 101, 32};
  Buffer none = test::garbage_buffer<float>(4, "stand-in");
  REQUIRE(kernels::embedding_forward(texels, s, none.whole(), none.whole(), none.whole(),
                                     none.whole())[0]
              .kernel == KernelId::embedding_forward_texels);
  REQUIRE(kernels::embedding_forward(storage, s, none.whole(), none.whole(), none.whole(),
                                     none.whole())[0]
              .kernel == KernelId::embedding_forward);
  Buffer dx = test::garbage_buffer<float>(3 * 23 * 48, "dx");
  REQUIRE(kernels::embedding_backward(texels, s, none.whole(), dx.whole(), none.whole(),
                                      none.whole(), false, false)[0]
              .kernel == KernelId::embedding_backward_texels);
  for (uint64_t binding : {uint64_t{0}, uint64_t{38 * 48 * sizeof(float)}})
    for (bool acc : {false, true}) {
      DYNAMIC_SECTION("max binding " << binding << " accumulate " << acc) {
        DeviceQuirks a = storage, b = texels;
        if (binding) a.max_binding_bytes = b.max_binding_bytes = binding;
        auto in = make_inputs(s, acc, acc);
        in.tokens[9] = 101;  // outside the vocabulary: a NaN row from either kernel
        const EmbRun got = run_gpu(in, b), want = run_gpu(in, a);
        REQUIRE(test::bit_identical(got.x, want.x));
        for (std::size_t c = 0; c < 48; ++c) REQUIRE(std::isnan(got.x[9 * 48 + c]));
        REQUIRE(test::bit_identical(got.dwte, want.dwte));
        REQUIRE(test::bit_identical(got.dwpe, want.dwpe));
      }
    }
}

TEST_CASE("embedding binds wte in pieces when it exceeds the binding limit") {
  DeviceQuirks small = quirks();
  // 38 rows fit; pieces start on 256-byte boundaries, so 36 rows each: 36 + 36 + 29.
  small.max_binding_bytes = 38 * 48 * sizeof(float);
  for (bool acc : {false, true}) {
    DYNAMIC_SECTION("accumulate " << acc) {
      auto in = make_inputs({3, 23, 48, 101, 32}, acc, acc);
      auto g = run_gpu(in, small);
      REQUIRE(g.dispatches == 2 * 3);  // 101 rows in pieces of 36, forward and backward
      check_exact(in, g);
    }
  }
}

TEST_CASE("embedding writes NaN rows for tokens outside the vocabulary") {
  auto in = make_inputs({3, 23, 48, 101, 32}, false, false);
  in.tokens[7] = 101;
  DeviceQuirks small = quirks();
  small.max_binding_bytes = 40 * 48 * sizeof(float);
  for (const DeviceQuirks& q : {quirks(), small}) {
    auto g = run_gpu(in, q);
    for (std::size_t r = 0; r < in.tokens.size(); ++r)
      for (std::size_t c = 0; c < 48; ++c) {
        INFO("row " << r << " channel " << c);
        REQUIRE(std::isnan(g.x[r * 48 + c]) == (r == 7));
      }
  }
}

// The Llama family's token embedding: the same kernels with no position table; Gemma's scales
// the rows by sqrt(C) (x = float(w · scale), dwte sums float(dx · scale)).
TEST_CASE("token embedding without positions copies wte rows exactly and sums dwte") {
  auto in = make_inputs({3, 23, 48, 101, 32}, false, false);
  const float scale = GENERATE(1.0f, std::sqrt(48.0f));
  INFO("scale " << scale);
  in.s.scale = scale;
  in.wte[5 * 48 + 3] = -0.0f;  // must stay -0.0: no "+ 0.0" stands in for the position
  in.tokens[4] = 5;
  DeviceQuirks small = quirks();
  small.max_binding_bytes = 38 * 48 * sizeof(float);
  for (const DeviceQuirks& q : {quirks(), small})
    for (bool acc : {false, true}) {
      const auto& s = in.s;
      const std::size_t rows = std::size_t(s.B) * s.T, nwte = std::size_t(s.V) * s.C;
      std::vector<float> dwte0 = test::random_floats(nwte, 70);
      Buffer tokens = test::upload_buffer(in.tokens, "tokens");
      Buffer wte = test::upload_buffer(in.wte, "wte"), dx = test::upload_buffer(in.dx, "dx");
      Buffer x = test::garbage_buffer<float>(rows * s.C, "x");
      Buffer dwte =
          acc ? test::upload_buffer(dwte0, "dwte") : test::garbage_buffer<float>(nwte, "dwte");
      auto ds = kernels::embedding_forward(q, s, tokens.whole(), wte.whole(), {}, x.whole());
      auto bw = kernels::embedding_backward(q, s, tokens.whole(), dx.whole(), dwte.whole(), {}, acc,
                                            false);
      ds.insert(ds.end(), bw.begin(), bw.end());
      test::run_once(std::move(ds));
      std::vector<float> want_x, want_dwte = acc ? dwte0 : std::vector<float>(nwte);
      std::vector<float> zero_wpe(std::size_t(s.ctx) * s.C), dwpe(zero_wpe.size());
      ref::embedding_forward(want_x, in.tokens, in.wte, zero_wpe, s.B, s.T, s.C);
      std::vector<float> scaled_dx = in.dx;
      for (float& v : scaled_dx) v *= scale;
      ref::embedding_backward(want_dwte, dwpe, in.tokens, scaled_dx, s.B, s.T, s.C, acc, false);
      const auto got_x = test::read<float>(x, rows * s.C);
      REQUIRE(test::bit_identical(test::read<float>(dwte, nwte), want_dwte));
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < s.C; ++c) {
          const float w = in.wte[in.tokens[r] * s.C + c] * scale;
          REQUIRE(std::bit_cast<uint32_t>(got_x[r * s.C + c]) == std::bit_cast<uint32_t>(w));
        }
    }
}

TEST_CASE("embedding GPU runs are bit-identical") {
  auto in = make_inputs({3, 23, 48, 101, 32}, false, false);
  auto a = run_gpu(in, quirks()), b = run_gpu(in, quirks());
  REQUIRE(test::bit_identical(a.x, b.x));
  REQUIRE(test::bit_identical(a.dwte, b.dwte));
  REQUIRE(test::bit_identical(a.dwpe, b.dwpe));
}

}  // namespace

namespace {

// llvmpipe ends an invocation after 65535 loop iterations in total; the dwte channel loop runs
// over V rows (zeroing) and then BT positions, which together exceed that here.
TEST_CASE("embedding backward at GPT-2's vocabulary with many positions") {
  auto in = make_inputs({16, 1024, 4, 50257, 1024}, false, false);
  check_exact(in, run_gpu(in, quirks()));
}

}  // namespace

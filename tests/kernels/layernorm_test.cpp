// LayerNorm forward and backward: the reference backward against finite differences, the GPU
// kernels against the reference at awkward and GPT-2 shapes, accumulation, and bit-identity.
#include <catch2/catch.hpp>

#include "runtime/kernels/layernorm.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/layernorm.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

TEST_CASE("layernorm reference backward matches finite differences") {
  const std::size_t rows = 5, C = 7;
  auto x = test::random_doubles(rows * C, 11, -2, 2);
  auto w = test::random_doubles(C, 12, 0.5, 1.5);
  auto b = test::random_doubles(C, 13);
  auto weights = test::random_doubles(rows * C, 14);  // dL/dy
  std::vector<double> y, mean, rstd;
  auto loss = [&] {
    ref::layernorm_forward(y, mean, rstd, x, w, b, rows, C);
    return test::weighted_sum(y, weights);
  };
  loss();
  std::vector<double> dx(rows * C), dw(C), db(C);
  ref::layernorm_backward(dx, dw, db, weights, x, w, mean, rstd, rows, C, false, false);
  test::require_matches_finite_differences(loss, x, dx, "dx");
  test::require_matches_finite_differences(loss, w, dw, "dw");
  test::require_matches_finite_differences(loss, b, db, "db");
}

struct LnRun {
  std::vector<float> y, mean, rstd, dx, dw, db;
};

struct LnInputs {
  std::size_t rows, C;
  std::vector<float> x, w, b, dy;
  // Prior gradient contents for the accumulate case (empty: overwrite).
  std::vector<float> dx0, dw0, db0;
  bool frozen = false;  // weight and bias frozen: the backward writes dx only
};

LnInputs make_inputs(std::size_t rows, std::size_t C, bool accumulate) {
  LnInputs in{rows, C};
  // An offset and scale per row like real residual streams, so mean and variance matter.
  in.x = test::random_floats(rows * C, 21 + C, -3, 3);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < C; ++c) in.x[r * C + c] += float(r % 5) - 2.0f;
  in.w = test::random_floats(C, 22, 0.5f, 1.5f);
  in.b = test::random_floats(C, 23);
  in.dy = test::random_floats(rows * C, 24);
  if (accumulate) {
    in.dx0 = test::random_floats(rows * C, 25);
    in.dw0 = test::random_floats(C, 26);
    in.db0 = test::random_floats(C, 27);
  }
  return in;
}

// The device's own variant unless told: storage buffers, or texel views on CPU drivers.
DeviceQuirks with_texels(bool on) {
  DeviceQuirks q = test::device().plan().quirks;
  q.texel_fetch_beats_storage_loads = on;
  return q;
}

LnRun run_gpu(const LnInputs& in, const DeviceQuirks& q = test::device().plan().quirks) {
  const bool acc = !in.dx0.empty();
  const std::size_t n = in.rows * in.C;
  Buffer x = test::upload_buffer(in.x, "x"), w = test::upload_buffer(in.w, "w"),
         b = test::upload_buffer(in.b, "b"), dy = test::upload_buffer(in.dy, "dy");
  Buffer y = test::garbage_buffer<float>(n, "y"),
         mean = test::garbage_buffer<float>(in.rows, "mean"),
         rstd = test::garbage_buffer<float>(in.rows, "rstd");
  Buffer dx = acc ? test::upload_buffer(in.dx0, "dx") : test::garbage_buffer<float>(n, "dx");
  Buffer dw = acc ? test::upload_buffer(in.dw0, "dw") : test::garbage_buffer<float>(in.C, "dw");
  Buffer db = acc ? test::upload_buffer(in.db0, "db") : test::garbage_buffer<float>(in.C, "db");
  kernels::LayernormShape s{uint32_t(in.rows), uint32_t(in.C)};
  test::run_once(
      {kernels::layernorm_forward(q, s, x.whole(), w.whole(), b.whole(), y.whole(), mean.whole(),
                                  rstd.whole()),
       kernels::layernorm_backward(q, s, dy.whole(), x.whole(), w.whole(), mean.whole(),
                                   rstd.whole(), dx.whole(), in.frozen ? BufferSlice{} : dw.whole(),
                                   in.frozen ? BufferSlice{} : db.whole(), acc, acc)});
  return {test::read<float>(y, n),          test::read<float>(mean, in.rows),
          test::read<float>(rstd, in.rows), test::read<float>(dx, n),
          test::read<float>(dw, in.C),      test::read<float>(db, in.C)};
}

// Reductions over C (forward, dx) and over BT (dw, db) in fp32: 1e-4 relative, with an
// absolute floor of 1e-5 (inputs and outputs are O(1)) for elements that cancel to near 0.
void check_against_reference(const LnInputs& in, const LnRun& g) {
  using test::to_double;
  const bool acc = !in.dx0.empty();
  std::vector<double> y, mean, rstd;
  ref::layernorm_forward(y, mean, rstd, to_double(in.x), to_double(in.w), to_double(in.b), in.rows,
                         in.C);
  std::vector<double> dx = acc ? to_double(in.dx0) : std::vector<double>(in.rows * in.C);
  std::vector<double> dw = acc ? to_double(in.dw0) : std::vector<double>(in.C);
  std::vector<double> db = acc ? to_double(in.db0) : std::vector<double>(in.C);
  ref::layernorm_backward(dx, dw, db, to_double(in.dy), to_double(in.x), to_double(in.w), mean,
                          rstd, in.rows, in.C, acc, acc);
  const double rtol = 1e-4, atol = 1e-5;
  test::require_close(g.y, y, rtol, atol, "y");
  test::require_close(g.mean, mean, rtol, atol, "mean");
  test::require_close(g.rstd, rstd, rtol, atol, "rstd");
  test::require_close(g.dx, dx, rtol, atol, "dx");
  // dw/db sum rows terms of magnitude ~1: the floor scales with the number of rows.
  test::require_close(g.dw, dw, rtol, atol * double(in.rows), "dw");
  test::require_close(g.db, db, rtol, atol * double(in.rows), "db");
}

TEST_CASE("layernorm GPU forward and backward match the reference") {
  struct Shape {
    std::size_t rows, C;
  };
  for (Shape sh : {Shape{3 * 23, 48}, Shape{1, 1}, Shape{7, 33}, Shape{4 * 64, 768}}) {
    DYNAMIC_SECTION("rows " << sh.rows << " C " << sh.C) {
      auto in = make_inputs(sh.rows, sh.C, false);
      check_against_reference(in, run_gpu(in));
    }
  }
}

TEST_CASE("layernorm backward accumulates onto existing gradients") {
  auto in = make_inputs(3 * 23, 48, true);
  auto g = run_gpu(in);
  check_against_reference(in, g);
  // dx gets one contribution per element, so accumulating must be exactly old + overwrite.
  auto fresh = in;
  fresh.dx0.clear(), fresh.dw0.clear(), fresh.db0.clear();
  auto o = run_gpu(fresh);
  for (std::size_t i = 0; i < g.dx.size(); ++i) {
    INFO("dx element " << i);
    REQUIRE(g.dx[i] == in.dx0[i] + o.dx[i]);
  }
}

TEST_CASE("layernorm backward of a frozen weight writes dx alone, with the same bits") {
  for (bool texels : {false, true})
    for (bool accumulate : {false, true}) {
      INFO("texels " << texels << " accumulate " << accumulate);
      auto in = make_inputs(3 * 23, 48, accumulate);
      const LnRun trained = run_gpu(in, with_texels(texels));
      in.frozen = true;
      const LnRun frozen = run_gpu(in, with_texels(texels));
      REQUIRE(test::bit_identical(frozen.dx, trained.dx));
      REQUIRE(test::bit_identical(frozen.y, trained.y));
    }
}

TEST_CASE("layernorm GPU runs are bit-identical, through storage buffers or texel views") {
  auto in = make_inputs(3 * 23, 48, true);
  auto [a, b] = GENERATE(table<bool, bool>({{false, false}, {true, true}, {false, true}}));
  INFO("texels " << a << " and " << b);
  const LnRun x = run_gpu(in, with_texels(a)), y = run_gpu(in, with_texels(b));
  REQUIRE(test::bit_identical(x.y, y.y));
  REQUIRE(test::bit_identical(x.mean, y.mean));
  REQUIRE(test::bit_identical(x.rstd, y.rstd));
  REQUIRE(test::bit_identical(x.dx, y.dx));
  REQUIRE(test::bit_identical(x.dw, y.dw));
  REQUIRE(test::bit_identical(x.db, y.db));
}

TEST_CASE("layernorm through texel views matches the reference") {
  for (bool acc : {false, true}) {
    auto in = make_inputs(3 * 23, 48, acc);
    check_against_reference(in, run_gpu(in, with_texels(true)));
  }
}

TEST_CASE("layernorm picks the texel kernels only with the quirk") {
  Buffer b = test::garbage_buffer<float>(64, "b");
  const kernels::LayernormShape s{4, 16};
  auto fwd = [&](bool t) {
    return kernels::layernorm_forward(with_texels(t), s, b.whole(), b.whole(), b.whole(), b.whole(),
                                      b.whole(), b.whole())
        .kernel;
  };
  CHECK(fwd(true) == KernelId::layernorm_forward_vec4_texels);
  CHECK(fwd(false) == KernelId::layernorm_forward);
  const kernels::LayernormShape odd{4, 15};  // C not a multiple of 4: one float per fetch
  CHECK(kernels::layernorm_forward(with_texels(true), odd, b.whole(), b.whole(), b.whole(),
                                   b.whole(), b.whole(), b.whole())
            .kernel == KernelId::layernorm_forward_texels);
}

TEST_CASE("layernorm takes four channels per fetch where C allows, with the same bits") {
  Buffer b = test::garbage_buffer<float>(4096, "b");
  auto bwd = [&](uint32_t C, uint64_t offset) {
    const BufferSlice x{b.handle(), offset, 4 * 16 * uint64_t(C)};
    return kernels::layernorm_backward(with_texels(true), {16, C}, x, x, x, x, x, x, x, x, false,
                                       false)
        .kernel;
  };
  CHECK(bwd(48, 0) == KernelId::layernorm_backward_vec4_texels);
  CHECK(bwd(33, 0) == KernelId::layernorm_backward_texels);  // C not a multiple of 4
  CHECK(bwd(48, 4) == KernelId::layernorm_backward_texels);  // slices off texel boundaries
  struct Shape {
    std::size_t rows, C;
  };
  // tiny's B=8 T=64 C=128, GPT-shaped, and rows of a single vec4.
  for (Shape sh : {Shape{512, 128}, Shape{3 * 23, 48}, Shape{5, 4}})
    for (bool accumulate : {false, true})
      for (bool frozen : {false, true}) {
        INFO("rows " << sh.rows << " C " << sh.C << " accumulate " << accumulate << " frozen "
                     << frozen);
        auto in = make_inputs(sh.rows, sh.C, accumulate);
        in.frozen = frozen;
        const LnRun storage = run_gpu(in, with_texels(false)),
                    vec4 = run_gpu(in, with_texels(true));
        REQUIRE(test::bit_identical(vec4.y, storage.y));
        REQUIRE(test::bit_identical(vec4.mean, storage.mean));
        REQUIRE(test::bit_identical(vec4.rstd, storage.rstd));
        REQUIRE(test::bit_identical(vec4.dx, storage.dx));
        if (!frozen) {
          REQUIRE(test::bit_identical(vec4.dw, storage.dw));
          REQUIRE(test::bit_identical(vec4.db, storage.db));
        }
      }
}

}  // namespace

namespace {

// llvmpipe ends an invocation after 65535 loop iterations in total; the dw/db channel loop runs
// over all rows, which exceed that here.
TEST_CASE("layernorm backward with more rows than llvmpipe's loop limit") {
  auto in = make_inputs(66000, 8, false);
  check_against_reference(in, run_gpu(in));
}

}  // namespace

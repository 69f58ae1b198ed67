// RMSNorm forward and backward: the reference backward against finite differences, the GPU
// kernels against the reference at awkward and Llama-like shapes, accumulation, texel views and
// bit-identity; each also with Gemma's gain 1 + w.
#include <catch2/catch.hpp>

#include "runtime/kernels/rmsnorm.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/rmsnorm.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

constexpr float kEps = 1e-5f;

// Rows of a layer (5 rows of 7), and Qwen3's per-head q/k norm: [B2, T3, 4 heads of 6] read as
// 24 rows of 6 sharing one gain, whose gradient sums over positions and heads alike; each with
// the gain w and with Gemma's 1 + w.
TEST_CASE("rmsnorm reference backward matches finite differences") {
  const auto shape = GENERATE(std::pair<std::size_t, std::size_t>{5, 7},
                              std::pair<std::size_t, std::size_t>{2 * 3 * 4, 6});
  const double offset = GENERATE(0.0, 1.0);
  INFO("offset " << offset);
  const std::size_t rows = shape.first, C = shape.second;
  auto x = test::random_doubles(rows * C, 41, -2, 2);
  auto w = test::random_doubles(C, 42, 0.5, 1.5);
  auto weights = test::random_doubles(rows * C, 43);  // dL/dy
  std::vector<double> y, rstd;
  auto loss = [&] {
    ref::rmsnorm_forward(y, rstd, x, w, rows, C, double(kEps), offset);
    return test::weighted_sum(y, weights);
  };
  loss();
  std::vector<double> dx(rows * C), dw(C);
  ref::rmsnorm_backward(dx, dw, weights, x, w, rstd, rows, C, false, false, offset);
  test::require_matches_finite_differences(loss, x, dx, "dx");
  test::require_matches_finite_differences(loss, w, dw, "dw");
}

struct RmsRun {
  std::vector<float> y, rstd, dx, dw;
};

struct RmsInputs {
  std::size_t rows, C;
  std::vector<float> x, w, dy;
  std::vector<float> dx0, dw0;  // prior gradient contents (empty: overwrite)
  bool unit_offset = false;     // Gemma's gain 1 + w
};

RmsInputs make_inputs(std::size_t rows, std::size_t C, bool accumulate, bool offset = false) {
  RmsInputs in{rows, C};
  in.unit_offset = offset;
  // A scale per row like real residual streams, so rstd differs from row to row.
  in.x = test::random_floats(rows * C, 51 + C, -3, 3);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < C; ++c) in.x[r * C + c] *= 0.25f + float(r % 5);
  // Gemma's offsets straddle 0 (trained gains both below and above 1).
  in.w = offset ? test::random_floats(C, 52, -0.5f, 0.5f) : test::random_floats(C, 52, 0.5f, 1.5f);
  in.dy = test::random_floats(rows * C, 53);
  if (accumulate) {
    in.dx0 = test::random_floats(rows * C, 54);
    in.dw0 = test::random_floats(C, 55);
  }
  return in;
}

DeviceQuirks with_texels(bool on) {
  DeviceQuirks q = test::device().plan().quirks;
  q.texel_fetch_beats_storage_loads = on;
  return q;
}

kernels::GradWrite mode(bool acc) {
  return acc ? kernels::GradWrite::accumulate : kernels::GradWrite::overwrite;
}

RmsRun run_gpu(const RmsInputs& in, const DeviceQuirks& q = test::device().plan().quirks) {
  const bool acc = !in.dx0.empty();
  const std::size_t n = in.rows * in.C;
  Buffer x = test::upload_buffer(in.x, "x"), w = test::upload_buffer(in.w, "w"),
         dy = test::upload_buffer(in.dy, "dy");
  Buffer y = test::garbage_buffer<float>(n, "y"),
         rstd = test::garbage_buffer<float>(in.rows, "rstd");
  Buffer dx = acc ? test::upload_buffer(in.dx0, "dx") : test::garbage_buffer<float>(n, "dx");
  Buffer dw = acc ? test::upload_buffer(in.dw0, "dw") : test::garbage_buffer<float>(in.C, "dw");
  const kernels::RmsnormShape s{uint32_t(in.rows), uint32_t(in.C), kEps, in.unit_offset};
  test::run_once({kernels::rmsnorm_forward(q, s, x.whole(), w.whole(), y.whole(), rstd.whole()),
                  kernels::rmsnorm_backward(q, s, dy.whole(), x.whole(), w.whole(), rstd.whole(),
                                            dx.whole(), dw.whole(), mode(acc), mode(acc))});
  return {test::read<float>(y, n), test::read<float>(rstd, in.rows), test::read<float>(dx, n),
          test::read<float>(dw, in.C)};
}

// Reductions over C (forward, dx) and over rows (dw) in fp32: 1e-4 relative, with an absolute
// floor of 1e-5 (inputs and outputs are O(1)) for elements that cancel to near 0; dw sums rows
// terms of magnitude ~1, so its floor scales with the number of rows.
void check_against_reference(const RmsInputs& in, const RmsRun& g) {
  using test::to_double;
  const bool acc = !in.dx0.empty();
  std::vector<double> y, rstd;
  const double offset = in.unit_offset ? 1.0 : 0.0;
  ref::rmsnorm_forward(y, rstd, to_double(in.x), to_double(in.w), in.rows, in.C, double(kEps),
                       offset);
  std::vector<double> dx = acc ? to_double(in.dx0) : std::vector<double>(in.rows * in.C);
  std::vector<double> dw = acc ? to_double(in.dw0) : std::vector<double>(in.C);
  ref::rmsnorm_backward(dx, dw, to_double(in.dy), to_double(in.x), to_double(in.w), rstd, in.rows,
                        in.C, acc, acc, offset);
  const double rtol = 1e-4, atol = 1e-5;
  test::require_close(g.y, y, rtol, atol, "y");
  test::require_close(g.rstd, rstd, rtol, atol, "rstd");
  test::require_close(g.dx, dx, rtol, atol, "dx");
  test::require_close(g.dw, dw, rtol, atol * double(in.rows), "dw");
}

TEST_CASE("rmsnorm GPU forward and backward match the reference") {
  struct Shape {
    std::size_t rows, C;
  };
  // The last two are Qwen3's per-head q_norm: B·T·heads rows of the head size (an odd B3 T23 with
  // 6 heads of 12, and Qwen3-0.6B's 16 heads of 128 at B2 T8).
  for (Shape sh : {Shape{3 * 23, 48}, Shape{1, 1}, Shape{7, 33}, Shape{2 * 64, 576},
                   Shape{3 * 23 * 6, 12}, Shape{2 * 8 * 16, 128}}) {
    for (bool texels : {false, true}) {
      for (bool offset : {false, true}) {
        DYNAMIC_SECTION("rows " << sh.rows << " C " << sh.C << " texels " << texels << " offset "
                                << offset) {
          auto in = make_inputs(sh.rows, sh.C, false, offset);
          check_against_reference(in, run_gpu(in, with_texels(texels)));
        }
      }
    }
  }
}

TEST_CASE("rmsnorm backward accumulates onto existing gradients") {
  for (bool texels : {false, true}) {
    INFO("texels " << texels);
    auto in = make_inputs(3 * 23, 48, true, texels);  // Gemma's offset with the texel kernels
    auto g = run_gpu(in, with_texels(texels));
    check_against_reference(in, g);
    // dx gets one contribution per element, so accumulating must be exactly old + overwrite.
    auto fresh = in;
    fresh.dx0.clear(), fresh.dw0.clear();
    auto o = run_gpu(fresh, with_texels(texels));
    for (std::size_t i = 0; i < g.dx.size(); ++i) {
      INFO("dx element " << i);
      REQUIRE(g.dx[i] == in.dx0[i] + o.dx[i]);
    }
  }
}

TEST_CASE("rmsnorm GPU runs are bit-identical, through storage buffers or texel views") {
  auto in = make_inputs(3 * 23, 48, true, GENERATE(false, true));
  auto [a, b] = GENERATE(table<bool, bool>({{false, false}, {true, true}, {false, true}}));
  INFO("texels " << a << " and " << b);
  const RmsRun x = run_gpu(in, with_texels(a)), y = run_gpu(in, with_texels(b));
  REQUIRE(test::bit_identical(x.y, y.y));
  REQUIRE(test::bit_identical(x.rstd, y.rstd));
  REQUIRE(test::bit_identical(x.dx, y.dx));
  REQUIRE(test::bit_identical(x.dw, y.dw));
}

TEST_CASE("rmsnorm picks the texel kernels only with the quirk") {
  Buffer b = test::garbage_buffer<float>(64, "b");
  const kernels::RmsnormShape s{4, 16};
  auto fwd = [&](bool t) {
    return kernels::rmsnorm_forward(with_texels(t), s, b.whole(), b.whole(), b.whole(), b.whole())
        .kernel;
  };
  auto bwd = [&](bool t) {
    return kernels::rmsnorm_backward(with_texels(t), s, b.whole(), b.whole(), b.whole(), b.whole(),
                                     b.whole(), b.whole(), kernels::GradWrite::overwrite,
                                     kernels::GradWrite::overwrite)
        .kernel;
  };
  CHECK(fwd(true) == KernelId::rmsnorm_forward_texels);
  CHECK(fwd(false) == KernelId::rmsnorm_forward);
  CHECK(bwd(true) == KernelId::rmsnorm_backward_texels);
  CHECK(bwd(false) == KernelId::rmsnorm_backward);
}

// llvmpipe ends an invocation after 65535 loop iterations in total; the dw channel loop runs
// over all rows, which exceed that here.
TEST_CASE("rmsnorm backward with more rows than llvmpipe's loop limit") {
  auto in = make_inputs(66000, 8, false);
  check_against_reference(in, run_gpu(in));
}

}  // namespace

namespace {

// Qwen3.5's q_norm reads each head row of q_proj's output in place: rows x_stride apart with the
// gate between them. Strided equals dense bit for bit, and dx's gate floats keep what they held.
TEST_CASE("rmsnorm with a row stride equals the dense rows and leaves the gaps alone") {
  const std::size_t rows = 2 * 5 * 3, C = 12, stride = 2 * C;
  for (bool texels : {false, true}) {
    for (bool acc : {false, true}) {
      INFO("texels " << texels << " accumulate " << acc);
      const DeviceQuirks q = with_texels(texels);
      const RmsInputs in = make_inputs(rows, C, acc, true);
      const RmsRun dense = run_gpu(in, q);
      std::vector<float> wide = test::random_floats(rows * stride, 61, -9, 9);
      std::vector<float> dx_wide = test::random_floats(rows * stride, 62);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < C; ++c) {
          wide[r * stride + c] = in.x[r * C + c];
          if (acc) dx_wide[r * stride + c] = in.dx0[r * C + c];
        }
      Buffer x = test::upload_buffer(wide, "x"), w = test::upload_buffer(in.w, "w"),
             dy = test::upload_buffer(in.dy, "dy"), dx = test::upload_buffer(dx_wide, "dx");
      Buffer y = test::garbage_buffer<float>(rows * C, "y"),
             rstd = test::garbage_buffer<float>(rows, "rstd");
      Buffer dw = acc ? test::upload_buffer(in.dw0, "dw") : test::garbage_buffer<float>(C, "dw");
      kernels::RmsnormShape s{uint32_t(rows), uint32_t(C), kEps, true};
      s.x_stride = uint32_t(stride);
      test::run_once(
          {kernels::rmsnorm_forward(q, s, x.whole(), w.whole(), y.whole(), rstd.whole()),
           kernels::rmsnorm_backward(q, s, dy.whole(), x.whole(), w.whole(), rstd.whole(),
                                     dx.whole(), dw.whole(), mode(acc), mode(acc))});
      CHECK(test::bit_identical(test::read<float>(y, rows * C), dense.y));
      CHECK(test::bit_identical(test::read<float>(rstd, rows), dense.rstd));
      CHECK(test::bit_identical(test::read<float>(dw, C), dense.dw));
      const std::vector<float> got = test::read<float>(dx, rows * stride);
      std::vector<float> rows_of_dx, gaps, gaps_before;
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < stride; ++c) {
          if (c < C)
            rows_of_dx.push_back(got[r * stride + c]);
          else
            gaps.push_back(got[r * stride + c]), gaps_before.push_back(dx_wide[r * stride + c]);
        }
      CHECK(test::bit_identical(rows_of_dx, dense.dx));
      CHECK(test::bit_identical(gaps, gaps_before));
    }
  }
}

TEST_CASE("rmsnorm refuses a row stride shorter than its rows") {
  Buffer b = test::garbage_buffer<float>(64, "b");
  kernels::RmsnormShape s{4, 16};
  s.x_stride = 8;
  CHECK_THROWS_WITH(kernels::rmsnorm_forward(test::device().plan().quirks, s, b.whole(), b.whole(),
                                             b.whole(), b.whole()),
                    Catch::Contains("row stride 8 is shorter than its rows of 16"));
}

}  // namespace

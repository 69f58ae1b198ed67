// Causal depthwise conv1d + SiLU (Gated DeltaNet): the reference's tap order and backward, the
// GPU kernels against the reference with and without packed rows, packed rows against their
// examples run alone, accumulation, the tap limit and bit-identity.
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>
#include <tuple>

#include "runtime/kernels/causal_conv1d.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/causal_conv1d.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// Positions of examples of these lengths packed one after another into one row.
std::vector<uint32_t> packed_positions(const std::vector<std::size_t>& lengths) {
  std::vector<uint32_t> pos;
  for (std::size_t n : lengths)
    for (std::size_t i = 0; i < n; ++i) pos.push_back(uint32_t(i));
  return pos;
}

// transformers' causal_conv1d_fn (PyTorch's conv1d, padding K-1, first T outputs) and llama.cpp's
// ssm_conv: the newest token meets w[c, K-1]. One channel, x = 1, 2, 3, w = 1, 10, 100, 1000:
// pre(t=2) = 1000*3 + 100*2 + 10*1 = 3210, pre(t=0) = 1000.
TEST_CASE("causal_conv1d reference pairs the newest token with the last tap") {
  std::vector<double> y;
  ref::causal_conv1d_forward(y, {1, 2, 3}, {1, 10, 100, 1000}, {1, 3, 1, 4, {}});
  auto silu = [](double v) { return v / (1 + std::exp(-v)); };
  CHECK(y[0] == silu(1000.0));
  CHECK(y[2] == silu(3210.0));
}

TEST_CASE("causal_conv1d reference backward matches finite differences") {
  const bool packed = GENERATE(false, true);
  INFO("packed " << packed);
  // Two rows of 9; packed, each row holds examples of 4, 1 and 4 tokens.
  ref::Conv1dLayout l{2, 9, 3, 4, {}};
  if (packed) {
    l.positions = packed_positions({4, 1, 4});
    auto second = l.positions;
    l.positions.insert(l.positions.end(), second.begin(), second.end());
  }
  auto x = test::random_doubles(l.rows * l.T * l.C, 61, -2, 2);
  auto w = test::random_doubles(l.C * l.K, 62, -1, 1);
  auto weights = test::random_doubles(x.size(), 63);
  std::vector<double> y;
  auto loss = [&] {
    ref::causal_conv1d_forward(y, x, w, l);
    return test::weighted_sum(y, weights);
  };
  std::vector<double> dx(x.size()), dw(w.size());
  ref::causal_conv1d_backward(dx, dw, weights, x, w, l, false, false);
  test::require_matches_finite_differences(loss, x, dx, "dx");
  test::require_matches_finite_differences(loss, w, dw, "dw");
}

struct ConvInputs {
  ref::Conv1dLayout l;
  std::vector<float> x, w, dy;
  std::vector<float> dx0, dw0;  // prior gradient contents (empty: overwrite)
};

struct ConvRun {
  std::vector<float> y, dx, dw;
};

ConvInputs make_inputs(const ref::Conv1dLayout& l, bool accumulate = false) {
  const std::size_t n = l.rows * l.T * l.C;
  ConvInputs in{l, test::random_floats(n, 71 + l.C, -3, 3),
                test::random_floats(l.C * l.K, 72, -1, 1), test::random_floats(n, 73)};
  if (accumulate) {
    in.dx0 = test::random_floats(n, 74);
    in.dw0 = test::random_floats(l.C * l.K, 75);
  }
  return in;
}

kernels::GradWrite mode(bool acc) {
  return acc ? kernels::GradWrite::accumulate : kernels::GradWrite::overwrite;
}

// The device's quirks with dw's order chosen: one invocation per channel (serial, CPU drivers)
// or one workgroup per channel (GPUs).
DeviceQuirks dw_order(bool serial) {
  DeviceQuirks q = test::device().plan().quirks;
  q.barriers_are_expensive = serial;
  return q;
}

ConvRun run_gpu(const ConvInputs& in, const DeviceQuirks& q = test::device().plan().quirks) {
  const auto& l = in.l;
  const std::size_t n = l.rows * l.T * l.C;
  const bool acc = !in.dx0.empty();
  Buffer x = test::upload_buffer(in.x, "x"), w = test::upload_buffer(in.w, "w"),
         dy = test::upload_buffer(in.dy, "dy"), y = test::garbage_buffer<float>(n, "y");
  Buffer dx = acc ? test::upload_buffer(in.dx0, "dx") : test::garbage_buffer<float>(n, "dx");
  Buffer dw =
      acc ? test::upload_buffer(in.dw0, "dw") : test::garbage_buffer<float>(l.C * l.K, "dw");
  Buffer pos = test::upload_buffer(l.positions.empty() ? std::vector<uint32_t>{0} : l.positions,
                                   "positions");
  const BufferSlice p = l.positions.empty() ? BufferSlice{} : pos.whole();
  const kernels::CausalConv1dShape s{uint32_t(l.rows), uint32_t(l.T), uint32_t(l.C), uint32_t(l.K)};
  test::run_once({kernels::causal_conv1d_forward(s, x.whole(), w.whole(), y.whole(), p),
                  kernels::causal_conv1d_backward_input(s, dy.whole(), x.whole(), w.whole(),
                                                        dx.whole(), mode(acc), p),
                  kernels::causal_conv1d_backward_weight(q, s, dy.whole(), x.whole(), w.whole(),
                                                         dw.whole(), mode(acc), p)});
  return {test::read<float>(y, n), test::read<float>(dx, n), test::read<float>(dw, l.C * l.K)};
}

// K-term fp32 sums for y and dx: 1e-5 relative with a 1e-6 floor (values are O(1)); dw sums
// rows·T terms of magnitude ~1, so its floor grows with them.
void check_against_reference(const ConvInputs& in, const ConvRun& g) {
  using test::to_double;
  const auto& l = in.l;
  const bool acc = !in.dx0.empty();
  std::vector<double> y;
  ref::causal_conv1d_forward(y, to_double(in.x), to_double(in.w), l);
  std::vector<double> dx = acc ? to_double(in.dx0) : std::vector<double>(in.x.size());
  std::vector<double> dw = acc ? to_double(in.dw0) : std::vector<double>(in.w.size());
  ref::causal_conv1d_backward(dx, dw, to_double(in.dy), to_double(in.x), to_double(in.w), l, acc,
                              acc);
  test::require_close(g.y, y, 1e-5, 1e-6, "y");
  test::require_close(g.dx, dx, 1e-5, 1e-6, "dx");
  test::require_close(g.dw, dw, 1e-5, 1e-6 * double(l.rows * l.T), "dw");
}

TEST_CASE("causal_conv1d GPU forward and backward match the reference") {
  // Awkward sizes, one token, rows of several 64-token chunks (the kernels' walks), T shorter
  // than the window, two taps and eight, and Qwen3.5-0.8B's 6144 channels (2·16·128 + 16·128)
  // over a short sequence.
  for (const ref::Conv1dLayout& l :
       {ref::Conv1dLayout{2, 37, 48, 4, {}}, ref::Conv1dLayout{1, 1, 1, 4, {}},
        ref::Conv1dLayout{2, 150, 9, 4, {}}, ref::Conv1dLayout{1, 129, 3, 3, {}},
        ref::Conv1dLayout{3, 2, 7, 4, {}}, ref::Conv1dLayout{3, 5, 7, 2, {}},
        ref::Conv1dLayout{2, 19, 5, 8, {}}, ref::Conv1dLayout{1, 16, 6144, 4, {}}}) {
    for (bool serial : {false, true}) {
      DYNAMIC_SECTION("rows " << l.rows << " T " << l.T << " C " << l.C << " K " << l.K
                              << " serial dw " << serial) {
        auto in = make_inputs(l);
        check_against_reference(in, run_gpu(in, dw_order(serial)));
      }
    }
  }
}

TEST_CASE("causal_conv1d GPU matches the reference on packed rows") {
  // Short examples, then examples across the 64-token chunk boundaries of the kernels' walks.
  for (auto [T, first, second] :
       {std::tuple<std::size_t, std::vector<std::size_t>, std::vector<std::size_t>>{
            20, {5, 1, 11, 3}, {2, 2, 16}},
        {200, {63, 3, 70, 64}, {64, 1, 135}}}) {
    for (bool serial : {false, true}) {
      DYNAMIC_SECTION("T " << T << " serial dw " << serial) {
        ref::Conv1dLayout l{2, T, 24, 4, packed_positions(first)};
        const auto row = packed_positions(second);
        l.positions.insert(l.positions.end(), row.begin(), row.end());
        auto in = make_inputs(l);
        check_against_reference(in, run_gpu(in, dw_order(serial)));
      }
    }
  }
}

// Each example of a packed row run alone (one row of its own length): y and dx must be the same
// bits; dw sums the same terms in another order, so it is only close.
TEST_CASE("causal_conv1d packed rows give the same bits as their examples alone") {
  // Short examples, and examples across the kernels' 64-token chunks.
  const auto lengths =
      GENERATE(std::vector<std::size_t>{5, 1, 11, 3}, std::vector<std::size_t>{60, 10, 100, 1});
  const std::size_t C = 24, K = 4;
  const std::size_t T = std::accumulate(lengths.begin(), lengths.end(), std::size_t(0));
  ref::Conv1dLayout l{1, T, C, K, packed_positions(lengths)};
  auto packed = make_inputs(l);
  const ConvRun whole = run_gpu(packed);
  std::vector<double> dw_sum(C * K, 0.0);
  std::size_t start = 0;
  for (std::size_t n : lengths) {
    INFO("example at " << start << " of " << n << " tokens");
    ConvInputs alone{{1, n, C, K, {}}, {}, packed.w, {}};
    auto slice = [&](const std::vector<float>& v) {
      return std::vector<float>(v.begin() + long(start * C), v.begin() + long((start + n) * C));
    };
    alone.x = slice(packed.x), alone.dy = slice(packed.dy);
    const ConvRun own = run_gpu(alone);
    REQUIRE(test::bit_identical(own.y, slice(whole.y)));
    REQUIRE(test::bit_identical(own.dx, slice(whole.dx)));
    for (std::size_t i = 0; i < dw_sum.size(); ++i) dw_sum[i] += own.dw[i];
    start += n;
  }
  test::require_close(whole.dw, dw_sum, 1e-5, 1e-5, "dw");
}

TEST_CASE("causal_conv1d backward accumulates onto existing gradients") {
  const bool serial = GENERATE(false, true);
  INFO("serial dw " << serial);
  ref::Conv1dLayout l{2, 13, 9, 4, packed_positions({6, 7})};
  l.positions.insert(l.positions.end(), l.positions.begin(), l.positions.end());
  auto in = make_inputs(l, true);
  const ConvRun g = run_gpu(in, dw_order(serial));
  check_against_reference(in, g);
  auto fresh = in;
  fresh.dx0.clear(), fresh.dw0.clear();
  const ConvRun o = run_gpu(fresh, dw_order(serial));
  for (std::size_t i = 0; i < g.dx.size(); ++i) {
    INFO("dx element " << i);
    REQUIRE(g.dx[i] == in.dx0[i] + o.dx[i]);
  }
  for (std::size_t i = 0; i < g.dw.size(); ++i) {
    INFO("dw element " << i);
    REQUIRE(g.dw[i] == in.dw0[i] + o.dw[i]);
  }
}

TEST_CASE("causal_conv1d GPU runs are bit-identical") {
  const bool packed = GENERATE(false, true);
  const bool serial = GENERATE(false, true);
  INFO("packed " << packed << " serial dw " << serial);
  ref::Conv1dLayout l{3, 41, 33, 4, {}};
  if (packed)
    for (int r = 0; r < 3; ++r) {
      const auto row = packed_positions({10, 1, 30});
      l.positions.insert(l.positions.end(), row.begin(), row.end());
    }
  auto in = make_inputs(l, true);
  const ConvRun a = run_gpu(in, dw_order(serial)), b = run_gpu(in, dw_order(serial));
  REQUIRE(test::bit_identical(a.y, b.y));
  REQUIRE(test::bit_identical(a.dx, b.dx));
  REQUIRE(test::bit_identical(a.dw, b.dw));
}

// llvmpipe ends an invocation after 65535 loop iterations in total; the serial dw walks every
// token of its channel, more than that here.
TEST_CASE("causal_conv1d backward with more tokens than llvmpipe's loop limit") {
  const bool serial = GENERATE(false, true);
  INFO("serial dw " << serial);
  auto in = make_inputs({2, 35000, 3, 4, {}});
  check_against_reference(in, run_gpu(in, dw_order(serial)));
}

TEST_CASE("causal_conv1d refuses more taps than its kernels hold") {
  Buffer b = test::garbage_buffer<float>(16, "b");
  const kernels::CausalConv1dShape s{1, 2, 2, 9};
  REQUIRE_THROWS_WITH(kernels::causal_conv1d_forward(s, b.whole(), b.whole(), b.whole()),
                      Catch::Contains("9 taps"));
}

}  // namespace

// The gated attention's sigmoid output gate: the reference backward against finite
// differences, the GPU kernels against the reference with a dense gate and with the gate read in
// place from q_proj's interleaved output (nothing else of it written), accumulation, and
// bit-identity.
#include <catch2/catch.hpp>

#include "runtime/kernels/sigmoid_gate.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/sigmoid_gate.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

std::size_t gate_floats(const ref::GateLayout& l) {
  return (l.count / l.D - 1) * l.gate_head_stride + l.gate_offset + l.D;
}

TEST_CASE("sigmoid_gate reference backward matches finite differences") {
  const ref::GateLayout l{4 * 3 * 5, 5, 10, 5};  // q_proj's [q | gate] per head
  auto x = test::random_doubles(l.count, 151, -2, 2);
  auto gate = test::random_doubles(gate_floats(l), 152, -6, 6);
  auto weights = test::random_doubles(l.count, 153);
  std::vector<double> y;
  auto loss = [&] {
    ref::sigmoid_gate_forward(y, x, gate, l);
    return test::weighted_sum(y, weights);
  };
  std::vector<double> dx(x.size()), dgate(gate.size(), 0.0);
  ref::sigmoid_gate_backward(dx, dgate, weights, x, gate, l, false);
  test::require_matches_finite_differences(loss, x, dx, "dx");
  test::require_matches_finite_differences(loss, gate, dgate, "dgate");
}

struct GateInputs {
  ref::GateLayout l;
  std::vector<float> x, gate, dy;
  std::vector<float> dx0, dgate0;  // prior contents (dgate: a pattern outside the gate places)
  bool accumulate = false;
};

struct GateRun {
  std::vector<float> y, dx, dgate;
};

GateInputs make_inputs(const ref::GateLayout& l, bool accumulate = false) {
  GateInputs in{l,
                test::random_floats(l.count, 161, -3, 3),
                test::random_floats(gate_floats(l), 162, -10, 10),
                test::random_floats(l.count, 163),
                test::random_floats(l.count, 164),
                test::random_floats(gate_floats(l), 165),
                accumulate};
  const float tails[] = {0.0f, 30.0f, -30.0f, 100.0f, -100.0f};  // sigmoid's tails
  for (std::size_t i = 0; i < std::size(tails) && i < l.count; ++i)
    in.gate[(i * l.count / std::size(tails)) / l.D * l.gate_head_stride + l.gate_offset] = tails[i];
  return in;
}

GateRun run_gpu(const GateInputs& in) {
  const auto& l = in.l;
  Buffer x = test::upload_buffer(in.x, "x"), gate = test::upload_buffer(in.gate, "gate"),
         dy = test::upload_buffer(in.dy, "dy"), y = test::garbage_buffer<float>(l.count, "y"),
         dgate = test::upload_buffer(in.dgate0, "dgate");
  Buffer dx = in.accumulate ? test::upload_buffer(in.dx0, "dx")
                            : test::garbage_buffer<float>(l.count, "dx");
  const kernels::SigmoidGateShape s{uint32_t(l.count), uint32_t(l.D), uint32_t(l.gate_head_stride),
                                    uint32_t(l.gate_offset)};
  const auto m = in.accumulate ? kernels::GradWrite::accumulate : kernels::GradWrite::overwrite;
  test::run_once({kernels::sigmoid_gate_forward(s, x.whole(), gate.whole(), y.whole()),
                  kernels::sigmoid_gate_backward(s, dy.whole(), x.whole(), gate.whole(), dx.whole(),
                                                 dgate.whole(), m, m)});
  return {test::read<float>(y, l.count), test::read<float>(dx, l.count),
          test::read<float>(dgate, in.gate.size())};
}

// Elementwise with one exp: 1e-5 relative with a 1e-7 floor (sigmoid's tails compare
// relatively).
void check_against_reference(const GateInputs& in, const GateRun& g) {
  using test::to_double;
  std::vector<double> y;
  ref::sigmoid_gate_forward(y, to_double(in.x), to_double(in.gate), in.l);
  std::vector<double> dx = in.accumulate ? to_double(in.dx0) : std::vector<double>(in.l.count);
  std::vector<double> dgate = to_double(in.dgate0);
  ref::sigmoid_gate_backward(dx, dgate, to_double(in.dy), to_double(in.x), to_double(in.gate), in.l,
                             in.accumulate);
  test::require_close(g.y, y, 1e-5, 1e-7, "y");
  test::require_close(g.dx, dx, 1e-5, 1e-7, "dx");
  test::require_close(g.dgate, dgate, 1e-5, 1e-7, "dgate");  // places outside: the old values
}

TEST_CASE("sigmoid_gate GPU forward and backward match the reference") {
  // A dense gate; one element; Qwen3.5's q_proj output of 8 heads of 256 (q then gate per head)
  // over 6 tokens; odd sizes.
  for (const ref::GateLayout& l :
       {ref::GateLayout{37 * 3 * 16, 16, 16, 0}, ref::GateLayout{1, 1, 1, 0},
        ref::GateLayout{6 * 8 * 256, 256, 512, 256}, ref::GateLayout{5 * 3 * 7, 7, 14, 7}}) {
    for (bool acc : {false, true}) {
      DYNAMIC_SECTION("count " << l.count << " D " << l.D << " stride " << l.gate_head_stride
                               << " offset " << l.gate_offset << " accumulate " << acc) {
        auto in = make_inputs(l, acc);
        check_against_reference(in, run_gpu(in));
      }
    }
  }
}

TEST_CASE("sigmoid_gate backward accumulates exactly onto existing gradients") {
  const ref::GateLayout l{9 * 4 * 32, 32, 64, 32};
  auto in = make_inputs(l, true);
  const GateRun g = run_gpu(in);
  auto fresh = in;
  fresh.accumulate = false;
  const GateRun o = run_gpu(fresh);
  for (std::size_t i = 0; i < l.count; ++i) {
    INFO("element " << i);
    REQUIRE(g.dx[i] == in.dx0[i] + o.dx[i]);
    const std::size_t j = i / l.D * l.gate_head_stride + l.gate_offset + i % l.D;
    REQUIRE(g.dgate[j] == in.dgate0[j] + o.dgate[j]);
  }
}

TEST_CASE("sigmoid_gate GPU runs are bit-identical") {
  auto in = make_inputs({23 * 6 * 40, 40, 80, 40}, true);
  const GateRun a = run_gpu(in), b = run_gpu(in);
  REQUIRE(test::bit_identical(a.y, b.y));
  REQUIRE(test::bit_identical(a.dx, b.dx));
  REQUIRE(test::bit_identical(a.dgate, b.dgate));
}

}  // namespace

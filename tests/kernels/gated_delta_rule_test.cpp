// Gated delta rule forward and backward: the reference against hand-computed steps and finite
// differences, the GPU kernels against the reference (GQA, odd T, dk != dv, packed rows, partial
// column blocks), chunked runs against one whole-range run bit for bit, v and dv at a stride
// against dense bit for bit, the forward without o, run-to-run identity, and the refusals.
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>

#include "runtime/kernels/gated_delta_rule.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/gated_delta_rule.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

using kernels::GatedDeltaRuleShape;

struct Case {
  GatedDeltaRuleShape shape;
  bool s0 = false, ds_final = false, packed = false;
};

ref::GdrShape ref_shape(const GatedDeltaRuleShape& s) {
  return {s.rows, s.T, s.Hk, s.Hv, s.dk, s.dv};
}

// Unit-norm rows of d (as Qwen3.5's l2norm leaves q and k), times `scale`.
void normalise_rows(std::vector<double>& x, std::size_t d, double scale) {
  for (std::size_t r = 0; r < x.size() / d; ++r) {
    double n = 0;
    for (std::size_t i = 0; i < d; ++i) n += x[r * d + i] * x[r * d + i];
    for (std::size_t i = 0; i < d; ++i) x[r * d + i] *= scale / std::sqrt(n);
  }
}

// Inputs in the ranges Qwen3.5 produces: q, k unit norm (q times 1/sqrt(dk)), g = -exp(A) *
// softplus(.) < 0, beta = sigmoid(.) in (0, 1). Values are rounded to float first, so the GPU and
// the reference see the same numbers.
ref::GdrInputs make_inputs(const Case& c, uint64_t seed) {
  const auto& s = c.shape;
  const std::size_t bt = std::size_t(s.rows) * s.T;
  auto floats = [](std::vector<double> x) {
    for (double& v : x) v = double(float(v));
    return x;
  };
  ref::GdrInputs in;
  in.q = test::random_doubles(bt * s.Hk * s.dk, seed + 1);
  in.k = test::random_doubles(bt * s.Hk * s.dk, seed + 2);
  normalise_rows(in.q, s.dk, 1.0 / std::sqrt(double(s.dk)));
  normalise_rows(in.k, s.dk, 1.0);
  in.q = floats(in.q), in.k = floats(in.k);
  in.v = floats(test::random_doubles(bt * s.Hv * s.dv, seed + 3));
  in.g = floats(test::random_doubles(bt * s.Hv, seed + 4, -1.5, -0.01));
  in.beta = floats(test::random_doubles(bt * s.Hv, seed + 5, 0.05, 0.95));
  if (c.s0)
    in.s0 = floats(test::random_doubles(std::size_t(s.rows) * s.Hv * s.dk * s.dv, seed + 6));
  if (c.packed) {
    // Examples of 1 to 6 tokens; row 0 also starts one at t = 0, the other rows mid-example
    // (their first position is not 0, so s0 carries in).
    in.positions.resize(bt);
    for (std::size_t r = 0; r < s.rows; ++r) {
      uint32_t p = r == 0 ? 0 : 3, len = 2;
      for (std::size_t t = 0; t < s.T; ++t) {
        in.positions[r * s.T + t] = p;
        if (++p >= len) p = 0, len = 1 + (len * 5 + r) % 6;
      }
    }
  }
  return in;
}

std::vector<float> to_float(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

TEST_CASE("gated delta rule reference forward matches hand-computed steps") {
  // dk 2, dv 1, T 2 from S = 0. Step 0: g 0, beta 0.5, k (1, 0), v 2: delta = 0.5 (2 - 0) = 1,
  // S = (1, 0), o = (1, 1) . S = 1. Step 1: g ln 0.5, beta 1, k (0.6, 0.8), v 1: S = (0.5, 0),
  // kv = 0.3, delta = 0.7, S = (0.5 + 0.42, 0.56), o = (1, -1) . S = 0.36.
  const ref::GdrShape s{1, 2, 1, 1, 2, 1};
  ref::GdrInputs in;
  in.q = {1, 1, 1, -1};
  in.k = {1, 0, 0.6, 0.8};
  in.v = {2, 1};
  in.g = {0, std::log(0.5)};
  in.beta = {0.5, 1};
  std::vector<double> o, sT;
  ref::gated_delta_rule_forward(s, in, o, sT);
  CHECK(o[0] == Approx(1.0).margin(1e-15));
  CHECK(o[1] == Approx(0.36).margin(1e-15));
  CHECK(sT[0] == Approx(0.92).margin(1e-15));
  CHECK(sT[1] == Approx(0.56).margin(1e-15));
  // A reset at step 1 drops step 0's state: S = 0 + k * 1 (1 - 0) = (0.6, 0.8), o = -0.2.
  // Step 0's output is still its own.
  in.positions = {0, 0};
  ref::gated_delta_rule_forward(s, in, o, sT);
  CHECK(o[0] == Approx(1.0).margin(1e-15));
  CHECK(o[1] == Approx(-0.2).margin(1e-15));
}

// GQA with a reset mid-row, an initial state and a final-state gradient: every input's gradient.
TEST_CASE("gated delta rule reference backward matches finite differences") {
  const Case c{{2, 6, 1, 2, 3, 4}, true, true, true};
  ref::GdrInputs in = make_inputs(c, 10);
  const ref::GdrShape s = ref_shape(c.shape);
  const auto wo = test::random_doubles(std::size_t(2) * 6 * 2 * 4, 20);
  const auto ws = test::random_doubles(in.s0.size(), 21);
  auto loss = [&] {
    std::vector<double> o, sT;
    ref::gated_delta_rule_forward(s, in, o, sT);
    return test::weighted_sum(o, wo) + test::weighted_sum(sT, ws);
  };
  ref::GdrGrads gr;
  ref::gated_delta_rule_backward(s, in, wo, ws, gr);
  test::require_matches_finite_differences(loss, in.q, gr.dq, "dq");
  test::require_matches_finite_differences(loss, in.k, gr.dk, "dk");
  test::require_matches_finite_differences(loss, in.v, gr.dv, "dv");
  test::require_matches_finite_differences(loss, in.g, gr.dg, "dg");
  test::require_matches_finite_differences(loss, in.beta, gr.dbeta, "dbeta");
  test::require_matches_finite_differences(loss, in.s0, gr.ds0, "ds0");
}

struct GpuRun {
  std::vector<float> o, sT, dq, dk, dv, dg, dbeta, ds0;
  std::vector<float> dv_tensor;  // the whole buffer dv was written into
};

// v's places in its tensor: token n's Hv * dv floats at n * v_stride + v_offset (dense: 0, 0).
std::size_t v_tensor_floats(const GatedDeltaRuleShape& s) {
  return s.v_stride == 0 ? std::size_t(s.rows) * s.T * s.Hv * s.dv
                         : std::size_t(s.rows) * s.T * s.v_stride;
}
std::size_t v_place(const GatedDeltaRuleShape& s, std::size_t dense_index) {
  if (s.v_stride == 0) return dense_index;
  const std::size_t width = std::size_t(s.Hv) * s.dv;
  return dense_index / width * s.v_stride + s.v_offset + dense_index % width;
}

// v written at its places in a tensor of v_tensor_floats, the rest `filler`.
std::vector<float> v_tensor(const GatedDeltaRuleShape& s, const std::vector<float>& v,
                            const std::vector<float>& filler) {
  std::vector<float> t = filler;
  for (std::size_t i = 0; i < v.size(); ++i) t[v_place(s, i)] = v[i];
  return t;
}
std::vector<float> v_places(const GatedDeltaRuleShape& s, const std::vector<float>& t) {
  std::vector<float> v(std::size_t(s.rows) * s.T * s.Hv * s.dv);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = t[v_place(s, i)];
  return v;
}

// Device copies of one case's inputs and outputs.
struct GpuCase {
  Case c;
  Buffer q, k, v, g, beta, pos, s0, d_o, ds_final;
  Buffer o, dq, dk, dv, dg, dbeta;

  // With a v_stride, v and dv live in wider tensors whose other floats are `filler`.
  GpuCase(const Case& cs, const ref::GdrInputs& in, const std::vector<double>& d_o_,
          const std::vector<double>& dsf, const std::vector<float>& filler = {})
      : c(cs),
        q(test::upload_buffer(to_float(in.q), "q")),
        k(test::upload_buffer(to_float(in.k), "k")),
        v(test::upload_buffer(
            cs.shape.v_stride == 0 ? to_float(in.v) : v_tensor(cs.shape, to_float(in.v), filler),
            "v")),
        g(test::upload_buffer(to_float(in.g), "g")),
        beta(test::upload_buffer(to_float(in.beta), "beta")),
        pos(test::upload_buffer(in.positions.empty() ? std::vector<uint32_t>{0} : in.positions,
                                "positions")),
        s0(test::upload_buffer(in.s0.empty() ? std::vector<float>{0} : to_float(in.s0), "s0")),
        d_o(test::upload_buffer(to_float(d_o_), "do")),
        ds_final(test::upload_buffer(dsf.empty() ? std::vector<float>{0} : to_float(dsf), "dsT")),
        o(test::garbage_buffer<float>(in.v.size(), "o")),
        dq(test::garbage_buffer<float>(in.q.size(), "dq")),
        dk(test::garbage_buffer<float>(in.k.size(), "dk")),
        dv(cs.shape.v_stride == 0 ? test::garbage_buffer<float>(in.v.size(), "dv")
                                  : test::upload_buffer(filler, "dv")),
        dg(test::garbage_buffer<float>(in.g.size(), "dg")),
        dbeta(test::garbage_buffer<float>(in.g.size(), "dbeta")) {}

  std::size_t state_floats() const {
    const auto& s = c.shape;
    return std::size_t(s.rows) * s.Hv * s.dk * s.dv;
  }
  kernels::GatedDeltaRuleInputs inputs() const {
    return {q.whole(), k.whole(),    v.whole(),
            g.whole(), beta.whole(), c.packed ? pos.whole() : BufferSlice{}};
  }
  BufferSlice initial() const { return c.s0 ? s0.whole() : BufferSlice{}; }
  BufferSlice final_grad() const { return c.ds_final ? ds_final.whole() : BufferSlice{}; }

  // Forward then backward over [0, T) split at `cuts` (empty: one call each). The forward's
  // boundary states are kept; the backward runs the chunks last first, each from its kept state,
  // chaining dS through a buffer.
  GpuRun run(const std::vector<uint32_t>& cuts = {}) {
    const DeviceQuirks& qk = test::device().plan().quirks;
    std::vector<uint32_t> edges{0};
    edges.insert(edges.end(), cuts.begin(), cuts.end());
    edges.push_back(c.shape.T);
    const std::size_t n = edges.size() - 1, sf = state_floats();
    std::vector<Buffer> states, dstates;
    for (std::size_t i = 0; i <= n; ++i) {
      states.push_back(test::garbage_buffer<float>(sf, "state"));
      dstates.push_back(test::garbage_buffer<float>(sf, "dstate"));
    }
    std::vector<Dispatch> ds;
    for (std::size_t i = 0; i < n; ++i) {
      GatedDeltaRuleShape s = c.shape;
      s.t0 = edges[i], s.t1 = edges[i + 1];
      ds.push_back(kernels::gated_delta_rule_forward(qk, s, inputs(),
                                                     i == 0 ? initial() : states[i].whole(),
                                                     o.whole(), states[i + 1].whole()));
    }
    std::vector<Buffer> workspaces;
    for (std::size_t i = n; i-- > 0;) {
      GatedDeltaRuleShape s = c.shape;
      s.t0 = edges[i], s.t1 = edges[i + 1];
      const auto w = kernels::gated_delta_rule_backward_workspace(s);
      workspaces.push_back(test::garbage_buffer<uint8_t>(w.state_bytes, "state workspace"));
      const BufferSlice sw = workspaces.back().whole();
      workspaces.push_back(test::garbage_buffer<uint8_t>(w.partial_bytes, "partial workspace"));
      const BufferSlice pw = workspaces.back().whole();
      const kernels::GatedDeltaRuleGrads gr{dq.whole(), dk.whole(),    dv.whole(),
                                            dg.whole(), dbeta.whole(), dstates[i].whole()};
      auto b = kernels::gated_delta_rule_backward(
          qk, s, inputs(), i == 0 ? initial() : states[i].whole(), d_o.whole(),
          i == n - 1 ? final_grad() : dstates[i + 1].whole(), gr, sw, pw);
      ds.insert(ds.end(), b.begin(), b.end());
    }
    test::run_once(std::move(ds));
    const std::size_t nq = q.size() / 4, nv = o.size() / 4, ng = g.size() / 4;
    const auto dv_tensor = test::read<float>(dv, v_tensor_floats(c.shape));
    return {
        test::read<float>(o, nv),     test::read<float>(states[n], sf),  test::read<float>(dq, nq),
        test::read<float>(dk, nq),    v_places(c.shape, dv_tensor),      test::read<float>(dg, ng),
        test::read<float>(dbeta, ng), test::read<float>(dstates[0], sf), dv_tensor};
  }
};

struct Prepared {
  ref::GdrInputs in;
  std::vector<double> d_o, ds_final;
};

Prepared prepare(const Case& c, uint64_t seed) {
  Prepared p{make_inputs(c, seed)};
  p.d_o = test::random_doubles(p.in.v.size(), seed + 7);
  for (double& x : p.d_o) x = double(float(x));
  if (c.ds_final) {
    p.ds_final = test::random_doubles(
        std::size_t(c.shape.rows) * c.shape.Hv * c.shape.dk * c.shape.dv, seed + 8);
    for (double& x : p.ds_final) x = double(float(x));
  }
  return p;
}

// fp32 against double: each output is a dot product of dk terms of magnitude <= 1 over a state
// built by contracting steps (|k| = 1, 0 < beta < 1, decays < 1), so rounding does not grow with
// T; the gradients add sums over dv columns, blocks and heads. Outputs are O(1): 1e-4 relative
// with a 5e-6 absolute floor. Measured worst over these tests on llvmpipe (Mesa 22.3): absolute
// 1.1e-6 (dq), 9e-7 (dk), 8e-7 (dg, dbeta), 3e-7 (dv), 1e-7 (o, S_T, dS_0).
void check_against_reference(const Case& c, const Prepared& p, const GpuRun& gpu) {
  const ref::GdrShape s = ref_shape(c.shape);
  std::vector<double> o, sT;
  ref::gated_delta_rule_forward(s, p.in, o, sT);
  ref::GdrGrads gr;
  ref::gated_delta_rule_backward(s, p.in, p.d_o, p.ds_final, gr);
  const double rtol = 1e-4, atol = 5e-6;
  test::require_close(gpu.o, o, rtol, atol, "o");
  test::require_close(gpu.sT, sT, rtol, atol, "S_T");
  test::require_close(gpu.dq, gr.dq, rtol, atol, "dq");
  test::require_close(gpu.dk, gr.dk, rtol, atol, "dk");
  test::require_close(gpu.dv, gr.dv, rtol, atol, "dv");
  test::require_close(gpu.dg, gr.dg, rtol, atol, "dg");
  test::require_close(gpu.dbeta, gr.dbeta, rtol, atol, "dbeta");
  test::require_close(gpu.ds0, gr.ds0, rtol, atol, "dS_0");
}

GpuRun run_case(const Case& c, const Prepared& p, const std::vector<uint32_t>& cuts = {}) {
  GpuCase gc(c, p.in, p.d_o, p.ds_final);
  return gc.run(cuts);
}

TEST_CASE("gated delta rule GPU forward and backward match the reference") {
  // rows, T, Hk, Hv, dk, dv; then s0, dS_T, packed.
  const Case cases[] = {
      {{1, 1, 1, 1, 1, 1}},
      {{2, 7, 1, 2, 5, 3}, true, true, false},     // GQA, odd T, dk != dv
      {{1, 33, 2, 4, 16, 24}, true, false, true},  // packed rows with resets
      {{2, 9, 1, 1, 128, 40}, false, true, true},  // 16-column blocks, the last partial
      {{1, 5, 1, 2, 64, 70}, true, true, false},   // 32-column blocks, the last partial
      {{1, 21, 2, 2, 7, 70}, true, true, true},    // dv over one forward workgroup
  };
  for (const Case& c : cases) {
    const auto& s = c.shape;
    DYNAMIC_SECTION("rows " << s.rows << " T " << s.T << " Hk " << s.Hk << " Hv " << s.Hv << " dk "
                            << s.dk << " dv " << s.dv << " s0 " << c.s0 << " packed " << c.packed) {
      const Prepared p = prepare(c, 100 + s.dk);
      check_against_reference(c, p, run_case(c, p));
    }
  }
}

void require_identical(const GpuRun& a, const GpuRun& b) {
  CHECK(test::bit_identical(a.o, b.o));
  CHECK(test::bit_identical(a.sT, b.sT));
  CHECK(test::bit_identical(a.dq, b.dq));
  CHECK(test::bit_identical(a.dk, b.dk));
  CHECK(test::bit_identical(a.dv, b.dv));
  CHECK(test::bit_identical(a.dg, b.dg));
  CHECK(test::bit_identical(a.dbeta, b.dbeta));
  CHECK(test::bit_identical(a.ds0, b.ds0));
}

// The property a checkpoint planner relies on: a range split anywhere, its boundary states kept,
// gives the bits of one whole-range call, forward and backward.
TEST_CASE("gated delta rule in chunks equals one whole-range call bit for bit") {
  const Case c{{2, 23, 2, 4, 32, 20}, true, true, true};
  const Prepared p = prepare(c, 300);
  const GpuRun whole = run_case(c, p);
  check_against_reference(c, p, whole);
  for (const auto& cuts :
       {std::vector<uint32_t>{5, 13}, std::vector<uint32_t>{1, 2, 22}, std::vector<uint32_t>{11}}) {
    INFO("cuts at " << cuts.front() << " (" << cuts.size() << " cuts)");
    require_identical(run_case(c, p, cuts), whole);
  }
}

// Qwen3.5's graph reads v in place in the conv output [B, T, 2 key_dim + value_dim] and writes dv
// at the same places: strided v gives the dense bits, whole or in chunks, and dv's tensor keeps
// every other float. Floats after v's heads too, so a write past them is seen.
TEST_CASE("gated delta rule with v and dv at a stride equals dense bit for bit") {
  const Case dense{{2, 9, 1, 2, 16, 70}, true, true, true};  // two column blocks, one partial
  const Prepared p = prepare(dense, 600);
  const GpuRun want = run_case(dense, p);
  Case wide = dense;
  wide.shape.v_offset = 2 * 16;
  wide.shape.v_stride = 2 * 16 + 2 * 70 + 5;
  const std::vector<float> filler = test::random_floats(v_tensor_floats(wide.shape), 601);
  for (const auto& cuts : {std::vector<uint32_t>{}, std::vector<uint32_t>{4}}) {
    INFO(cuts.size() << " cuts");
    const GpuRun got = GpuCase(wide, p.in, p.d_o, p.ds_final, filler).run(cuts);
    require_identical(got, want);
    std::vector<float> others = got.dv_tensor;
    for (std::size_t i = 0; i < want.dv.size(); ++i)
      others[v_place(wide.shape, i)] = filler[v_place(wide.shape, i)];
    CHECK(test::bit_identical(others, filler));
  }
}

// gated_delta_state runs the recurrence for its chunk-start states alone.
TEST_CASE("gated delta rule forward without o gives the same state") {
  const Case c{{2, 13, 1, 2, 16, 24}, true, false, true};
  const Prepared p = prepare(c, 700);
  GpuCase gc(c, p.in, p.d_o, p.ds_final);
  const DeviceQuirks& qk = test::device().plan().quirks;
  Buffer with_o = test::garbage_buffer<float>(gc.state_floats(), "S with o");
  Buffer without_o = test::garbage_buffer<float>(gc.state_floats(), "S without o");
  test::run_once({kernels::gated_delta_rule_forward(qk, c.shape, gc.inputs(), gc.initial(),
                                                    gc.o.whole(), with_o.whole()),
                  kernels::gated_delta_rule_forward(qk, c.shape, gc.inputs(), gc.initial(), {},
                                                    without_o.whole())});
  CHECK(test::bit_identical(test::read<float>(without_o, gc.state_floats()),
                            test::read<float>(with_o, gc.state_floats())));
}

// gated_delta_rule's forward writes o alone (its end state is no tensor of the graph): the same o,
// not overwritten through s_out's binding, which then repeats o's.
TEST_CASE("gated delta rule forward without s_out gives the same o") {
  const Case c{{2, 13, 1, 2, 16, 24}, true, false, true};
  const Prepared p = prepare(c, 710);
  GpuCase gc(c, p.in, p.d_o, p.ds_final);
  const DeviceQuirks& qk = test::device().plan().quirks;
  const std::size_t no = gc.o.size() / 4;
  Buffer o2 = test::garbage_buffer<float>(no, "o without s_out");
  Buffer state = test::garbage_buffer<float>(gc.state_floats(), "S");
  test::run_once(
      {kernels::gated_delta_rule_forward(qk, c.shape, gc.inputs(), gc.initial(), gc.o.whole(),
                                         state.whole()),
       kernels::gated_delta_rule_forward(qk, c.shape, gc.inputs(), gc.initial(), o2.whole(), {})});
  CHECK(test::bit_identical(test::read<float>(o2, no), test::read<float>(gc.o, no)));
  CHECK_THROWS_WITH(
      kernels::gated_delta_rule_forward(qk, c.shape, gc.inputs(), gc.initial(), {}, {}),
      Catch::Contains("neither o nor s_out"));
}

// dk 32: this test also runs on a second driver in CI, where unrolled dk-128 pipelines take
// minutes to compile; the column blocks and the fixed-order reduction are the same at every dk.
TEST_CASE("gated delta rule GPU runs are bit-identical") {
  const Case c{{2, 17, 1, 2, 32, 48}, true, true, true};
  const Prepared p = prepare(c, 400);
  require_identical(run_case(c, p), run_case(c, p));
}

// llvmpipe stops an invocation's loops after 65535 iterations in total: a range as long as the
// builder allows must still run every step. dk 64 is past what Mesa unrolls on its own, so this
// fails if the head loops were loops; few columns keep the reference quick.
TEST_CASE("gated delta rule at the longest range one call may run matches the reference") {
  const DeviceQuirks& q = test::device().plan().quirks;
  const uint32_t steps = kernels::gated_delta_rule_max_backward_steps(q);
  const Case c{{1, steps == 0 ? 20000u : steps, 1, 1, 64, 2}, true, true, false};
  const Prepared p = prepare(c, 500);
  check_against_reference(c, p, run_case(c, p));
}

TEST_CASE("gated delta rule refuses bad shapes and ranges longer than the device runs") {
  DeviceQuirks q = test::device().plan().quirks;
  q.max_loop_iterations = 1000;
  Buffer b = test::garbage_buffer<float>(16, "b");
  const kernels::GatedDeltaRuleInputs in{b.whole(), b.whole(), b.whole(), b.whole(), b.whole()};
  const kernels::GatedDeltaRuleGrads gr{b.whole(), b.whole(), b.whole(), b.whole(), b.whole()};
  auto forward = [&](GatedDeltaRuleShape s) {
    kernels::gated_delta_rule_forward(q, s, in, {}, b.whole(), b.whole());
  };
  auto backward = [&](GatedDeltaRuleShape s) {
    kernels::gated_delta_rule_backward(q, s, in, {}, b.whole(), {}, gr, b.whole(), b.whole());
  };
  const uint32_t fmax = kernels::gated_delta_rule_max_forward_steps(q);
  const uint32_t bmax = kernels::gated_delta_rule_max_backward_steps(q);
  REQUIRE(bmax < fmax);
  REQUIRE_NOTHROW(forward({1, fmax, 1, 1, 2, 2}));
  REQUIRE_THROWS_WITH(forward({1, fmax + 1, 1, 1, 2, 2}), Catch::Contains("split the range"));
  REQUIRE_NOTHROW(backward({1, bmax, 1, 1, 2, 2}));
  REQUIRE_THROWS_WITH(backward({1, bmax + 1, 1, 1, 2, 2}), Catch::Contains("split the range"));
  REQUIRE_THROWS_WITH(forward({1, 4, 2, 3, 2, 2}), Catch::Contains("multiple of key heads"));
  REQUIRE_THROWS_WITH(forward({1, 4, 1, 1, 257, 2}), Catch::Contains("above 256"));
  REQUIRE_NOTHROW(forward({1, 4, 1, 2, 2, 2, 0, 0, 9, 5}));
  REQUIRE_THROWS_WITH(forward({1, 4, 1, 2, 2, 2, 0, 0, 8, 5}), Catch::Contains("token stride"));
  REQUIRE_THROWS_WITH(backward({1, 4, 1, 1, 2, 2, 0, 0, 0, 1}), Catch::Contains("token stride"));
  REQUIRE_THROWS_WITH(backward({1, 4, 1, 1, 2, 2, 3, 3}), Catch::Contains("non-empty"));
  REQUIRE_THROWS_WITH(backward({1, 4, 1, 1, 2, 2, 1, 5}), Catch::Contains("within T"));
}

// The workspace the builder reports is what the kernels index: sqrt(L)-step sub-ranges.
TEST_CASE("gated delta rule backward workspace sizes") {
  // L = 10: sub 4, 3 sub-ranges, 7 state slots; dk 128: 16-column blocks, dv 40: 3 of them.
  const auto w = kernels::gated_delta_rule_backward_workspace({2, 12, 1, 3, 128, 40, 2, 12});
  CHECK(w.state_bytes == 4ull * 2 * 3 * 7 * 128 * 40);
  CHECK(w.partial_bytes == 4ull * 2 * 3 * 10 * (3 * 2 * 128 + 2 * 40));
}

}  // namespace

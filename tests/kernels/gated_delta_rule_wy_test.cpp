// The gated delta rule's chunkwise (WY) forward on the GPU against the sequential reference and
// the chunkwise one: packed rows with restarts inside blocks, GQA, dk != dv, T not a multiple of
// the block, partial column groups; calls at block boundaries against one whole-range call bit for
// bit, run-to-run identity, the forward without o or without s_out, the longest range llvmpipe's
// loop limit allows, and the refusals.
#include <catch2/catch.hpp>

#include <cmath>

#include "graph/delta_rule_workspace.h"
#include "runtime/kernels/gated_delta_rule_wy.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/gated_delta_rule.h"
#include "tests/reference/gated_delta_rule_chunked.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

using kernels::GatedDeltaRuleShape;
constexpr uint32_t C = static_cast<uint32_t>(kDeltaRuleBlock);

struct Case {
  GatedDeltaRuleShape shape;
  bool s0 = true, packed = true;
};

ref::GdrShape ref_shape(const GatedDeltaRuleShape& s) {
  return {s.rows, s.T, s.Hk, s.Hv, s.dk, s.dv};
}

void normalise_rows(std::vector<double>& x, std::size_t d, double scale) {
  for (std::size_t r = 0; r < x.size() / d; ++r) {
    double n = 0;
    for (std::size_t i = 0; i < d; ++i) n += x[r * d + i] * x[r * d + i];
    for (std::size_t i = 0; i < d; ++i) x[r * d + i] *= scale / std::sqrt(n);
  }
}

// Inputs in Qwen3.5's ranges, in float (tests/kernels/gated_delta_rule_test.cpp says which);
// packed rows hold examples of 1 to 70 tokens, so restarts fall inside blocks, at their first
// token and not at all in some.
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
    const uint32_t lengths[] = {3, 64, 1, 70, 9, 5, 40};
    in.positions.resize(bt);
    for (std::size_t r = 0; r < s.rows; ++r) {
      uint32_t p = r == 0 ? 0 : 2, e = uint32_t(r);
      for (std::size_t t = 0; t < s.T; ++t) {
        in.positions[r * s.T + t] = p;
        if (++p >= lengths[e % 7]) p = 0, ++e;
      }
    }
  }
  return in;
}

std::vector<float> to_float(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

struct Run {
  std::vector<float> o, sT;
};

struct Grads {
  std::vector<float> dq, dk, dv, dg, dbeta, ds0;
};

struct GpuCase {
  Case c;
  Buffer q, k, v, g, beta, pos, s0, o;
  std::vector<double> d_o_, ds_final_;

  GpuCase(const Case& cs, const ref::GdrInputs& in, uint64_t seed = 0)
      : c(cs),
        q(test::upload_buffer(to_float(in.q), "q")),
        k(test::upload_buffer(to_float(in.k), "k")),
        v(test::upload_buffer(to_float(in.v), "v")),
        g(test::upload_buffer(to_float(in.g), "g")),
        beta(test::upload_buffer(to_float(in.beta), "beta")),
        pos(test::upload_buffer(in.positions.empty() ? std::vector<uint32_t>{0} : in.positions,
                                "positions")),
        s0(test::upload_buffer(in.s0.empty() ? std::vector<float>{0} : to_float(in.s0), "s0")),
        o(test::garbage_buffer<float>(in.v.size(), "o")) {
    d_o_ = test::random_doubles(in.v.size(), seed + 7);
    for (double& x : d_o_) x = double(float(x));
    ds_final_ = test::random_doubles(state_floats(), seed + 8);
    for (double& x : ds_final_) x = double(float(x));
  }

  std::size_t state_floats() const {
    const auto& s = c.shape;
    return std::size_t(s.rows) * s.Hv * s.dk * s.dv;
  }
  kernels::GatedDeltaRuleInputs inputs() const {
    return {q.whole(), k.whole(),    v.whole(),
            g.whole(), beta.whole(), c.packed ? pos.whole() : BufferSlice{}};
  }
  BufferSlice initial() const { return c.s0 ? s0.whole() : BufferSlice{}; }

  // Forward over [0, T) split at `cuts`, each call from the state the one before left.
  Run run(const std::vector<uint32_t>& cuts, const DeviceQuirks& qk) {
    std::vector<uint32_t> edges{0};
    edges.insert(edges.end(), cuts.begin(), cuts.end());
    edges.push_back(c.shape.T);
    std::vector<Buffer> states, work;
    std::vector<Dispatch> ds;
    for (std::size_t i = 0; i + 1 < edges.size(); ++i) {
      GatedDeltaRuleShape s = c.shape;
      s.t0 = edges[i], s.t1 = edges[i + 1];
      states.push_back(test::garbage_buffer<float>(state_floats(), "state"));
      work.push_back(test::garbage_buffer<uint8_t>(
          kernels::gated_delta_rule_wy_forward_workspace(s), "workspace"));
      auto d = kernels::gated_delta_rule_wy_forward(
          qk, s, inputs(), i == 0 ? initial() : states[i - 1].whole(), o.whole(),
          states.back().whole(), work.back().whole());
      ds.insert(ds.end(), d.begin(), d.end());
    }
    test::run_once(std::move(ds));
    return {test::read<float>(o, o.size() / 4), test::read<float>(states.back(), state_floats())};
  }
  Run run(const std::vector<uint32_t>& cuts = {}) {
    return run(cuts, test::device().plan().quirks);
  }

  // Forward then backward over [0, T) split at `cuts`: the forward's boundary states kept, the
  // backward's calls last first, each from its kept state, dS chained through a buffer.
  Grads backward(const std::vector<uint32_t>& cuts, const DeviceQuirks& qk) {
    std::vector<uint32_t> edges{0};
    edges.insert(edges.end(), cuts.begin(), cuts.end());
    edges.push_back(c.shape.T);
    const std::size_t n = edges.size() - 1, sf = state_floats();
    Buffer d_o = test::upload_buffer(to_float(d_o_), "do");
    Buffer dsT = test::upload_buffer(to_float(ds_final_), "dS_T");
    Buffer dq = test::garbage_buffer<float>(q.size() / 4, "dq");
    Buffer dk = test::garbage_buffer<float>(q.size() / 4, "dk");
    Buffer dv = test::garbage_buffer<float>(v.size() / 4, "dv");
    Buffer dg = test::garbage_buffer<float>(g.size() / 4, "dg");
    Buffer dbeta = test::garbage_buffer<float>(g.size() / 4, "dbeta");
    std::vector<Buffer> states, dstates, scratch;
    std::vector<Dispatch> ds;
    for (std::size_t i = 0; i <= n; ++i) {
      states.push_back(test::garbage_buffer<float>(sf, "state"));
      dstates.push_back(test::garbage_buffer<float>(sf, "dstate"));
    }
    for (std::size_t i = 0; i < n; ++i) {
      GatedDeltaRuleShape s = c.shape;
      s.t0 = edges[i], s.t1 = edges[i + 1];
      scratch.push_back(test::garbage_buffer<uint8_t>(
          kernels::gated_delta_rule_wy_forward_workspace(s), "workspace"));
      auto d = kernels::gated_delta_rule_wy_forward(qk, s, inputs(),
                                                    i == 0 ? initial() : states[i].whole(), {},
                                                    states[i + 1].whole(), scratch.back().whole());
      ds.insert(ds.end(), d.begin(), d.end());
    }
    for (std::size_t i = n; i-- > 0;) {
      GatedDeltaRuleShape s = c.shape;
      s.t0 = edges[i], s.t1 = edges[i + 1];
      const auto w = kernels::gated_delta_rule_wy_backward_workspace(s);
      scratch.push_back(test::garbage_buffer<uint8_t>(w.work_bytes, "work"));
      const BufferSlice work = scratch.back().whole();
      scratch.push_back(test::garbage_buffer<uint8_t>(w.keep_bytes, "keep"));
      const BufferSlice keep = scratch.back().whole();
      scratch.push_back(test::garbage_buffer<uint8_t>(w.partial_bytes, "partials"));
      const kernels::GatedDeltaRuleGrads gr{dq.whole(), dk.whole(),    dv.whole(),
                                            dg.whole(), dbeta.whole(), dstates[i].whole()};
      auto d = kernels::gated_delta_rule_wy_backward(
          qk, s, inputs(), i == 0 ? initial() : states[i].whole(), d_o.whole(),
          i == n - 1 ? dsT.whole() : dstates[i + 1].whole(), gr, work, keep,
          scratch.back().whole());
      ds.insert(ds.end(), d.begin(), d.end());
    }
    test::run_once(std::move(ds));
    return {test::read<float>(dq, dq.size() / 4),       test::read<float>(dk, dk.size() / 4),
            test::read<float>(dv, dv.size() / 4),       test::read<float>(dg, dg.size() / 4),
            test::read<float>(dbeta, dbeta.size() / 4), test::read<float>(dstates[0], sf)};
  }
  Grads backward(const std::vector<uint32_t>& cuts = {}) {
    return backward(cuts, test::device().plan().quirks);
  }
};

// Against both references, as the forward (1e-4 relative, 5e-6 absolute): the gradients add sums
// over the block's pairs and the dv columns, all of O(1) terms.
void check_grads(const GpuCase& gc, const ref::GdrInputs& in, const Grads& gpu) {
  const ref::GdrShape s = ref_shape(gc.c.shape);
  ref::GdrGrads seq, chk;
  ref::gated_delta_rule_backward(s, in, gc.d_o_, gc.ds_final_, seq);
  ref::chunked_gated_delta_rule_backward(s, in, C, ref::GdrArithmetic::f64, gc.d_o_, gc.ds_final_,
                                         chk);
  for (const ref::GdrGrads* want : {&seq, &chk}) {
    INFO((want == &seq ? "sequential" : "chunkwise") << " reference");
    test::require_close(gpu.dq, want->dq, 1e-4, 5e-6, "dq");
    test::require_close(gpu.dk, want->dk, 1e-4, 5e-6, "dk");
    test::require_close(gpu.dv, want->dv, 1e-4, 5e-6, "dv");
    test::require_close(gpu.dg, want->dg, 1e-4, 5e-6, "dg");
    test::require_close(gpu.dbeta, want->dbeta, 1e-4, 5e-6, "dbeta");
    test::require_close(gpu.ds0, want->ds0, 1e-4, 5e-6, "dS_0");
  }
}

void require_identical(const Grads& a, const Grads& b) {
  CHECK(test::bit_identical(a.dq, b.dq));
  CHECK(test::bit_identical(a.dk, b.dk));
  CHECK(test::bit_identical(a.dv, b.dv));
  CHECK(test::bit_identical(a.dg, b.dg));
  CHECK(test::bit_identical(a.dbeta, b.dbeta));
  CHECK(test::bit_identical(a.ds0, b.ds0));
}

// fp32 against double, as the sequential kernels (gated_delta_rule_test.cpp): outputs are O(1)
// sums over contracting steps, 1e-4 relative with a 5e-6 absolute floor.
void check_against_references(const Case& c, const ref::GdrInputs& in, const Run& gpu) {
  std::vector<double> o, sT, co, csT;
  ref::gated_delta_rule_forward(ref_shape(c.shape), in, o, sT);
  ref::chunked_gated_delta_rule_forward(ref_shape(c.shape), in, C, ref::GdrArithmetic::f64, co,
                                        csT);
  test::require_close(gpu.o, o, 1e-4, 5e-6, "o against the sequential reference");
  test::require_close(gpu.sT, sT, 1e-4, 5e-6, "S_T against the sequential reference");
  test::require_close(gpu.o, co, 1e-4, 5e-6, "o against the chunkwise reference");
  test::require_close(gpu.sT, csT, 1e-4, 5e-6, "S_T against the chunkwise reference");
}

TEST_CASE("gated delta rule chunkwise GPU forward matches the references") {
  // rows, T, Hk, Hv, dk, dv; then s0, packed.
  const Case cases[] = {
      {{1, 1, 1, 1, 1, 1}, false, false},
      {{2, 23, 1, 2, 5, 3}},                // GQA, one partial block, dk != dv
      {{1, 150, 2, 4, 16, 24}},             // three blocks, the last partial
      {{2, 130, 1, 1, 128, 40}, false},     // Qwen3.5's dk
      {{1, 70, 1, 2, 7, 70}, true, false},  // dv over one column group, odd dk
  };
  for (const Case& c : cases) {
    const auto& s = c.shape;
    DYNAMIC_SECTION("rows " << s.rows << " T " << s.T << " Hk " << s.Hk << " Hv " << s.Hv << " dk "
                            << s.dk << " dv " << s.dv << " s0 " << c.s0 << " packed " << c.packed) {
      const ref::GdrInputs in = make_inputs(c, 100 + s.dk);
      check_against_references(c, in, GpuCase(c, in).run());
    }
  }
}

TEST_CASE("gated delta rule chunkwise GPU backward matches the references") {
  const Case cases[] = {
      {{1, 1, 1, 1, 1, 1}, false, false},
      {{2, 23, 1, 2, 5, 3}},                // GQA, one partial block, dk != dv
      {{1, 150, 2, 4, 16, 24}},             // three blocks, the last partial
      {{1, 130, 1, 1, 128, 40}, false},     // Qwen3.5's dk
      {{1, 70, 1, 2, 7, 70}, true, false},  // dv over one column group, odd dk
  };
  for (const Case& c : cases) {
    const auto& s = c.shape;
    DYNAMIC_SECTION("rows " << s.rows << " T " << s.T << " Hk " << s.Hk << " Hv " << s.Hv << " dk "
                            << s.dk << " dv " << s.dv << " s0 " << c.s0 << " packed " << c.packed) {
      const ref::GdrInputs in = make_inputs(c, 150 + s.dk);
      GpuCase gc(c, in, 160);
      check_grads(gc, in, gc.backward());
    }
  }
}

TEST_CASE("gated delta rule chunkwise backward in calls at block boundaries equals one call") {
  const Case c{{2, 200, 2, 4, 32, 20}};
  const ref::GdrInputs in = make_inputs(c, 310);
  GpuCase gc(c, in, 320);
  const Grads whole = gc.backward();
  check_grads(gc, in, whole);
  for (const auto& cuts : {std::vector<uint32_t>{C, 2 * C}, std::vector<uint32_t>{3 * C}}) {
    INFO(cuts.size() << " cuts");
    require_identical(gc.backward(cuts), whole);
  }
}

TEST_CASE(
    "gated delta rule chunkwise forward in calls at block boundaries equals one call bit for bit") {
  const Case c{{2, 200, 2, 4, 32, 20}};
  const ref::GdrInputs in = make_inputs(c, 300);
  const Run whole = GpuCase(c, in).run();
  check_against_references(c, in, whole);
  for (const auto& cuts : {std::vector<uint32_t>{C, 2 * C}, std::vector<uint32_t>{3 * C}}) {
    INFO(cuts.size() << " cuts");
    const Run got = GpuCase(c, in).run(cuts);
    CHECK(test::bit_identical(got.o, whole.o));
    CHECK(test::bit_identical(got.sT, whole.sT));
  }
}

TEST_CASE("gated delta rule chunkwise GPU runs are bit-identical") {
  const Case c{{2, 80, 1, 2, 32, 48}};
  const ref::GdrInputs in = make_inputs(c, 400);
  const Run a = GpuCase(c, in).run(), b = GpuCase(c, in).run();
  CHECK(test::bit_identical(a.o, b.o));
  CHECK(test::bit_identical(a.sT, b.sT));
  GpuCase gc(c, in, 410);
  require_identical(gc.backward(), gc.backward());
}

// CPU drivers read the scratch through texel views, other devices as storage buffers: the same
// bits, forward and backward, whole and in calls.
TEST_CASE("gated delta rule chunkwise kernels through texel views give the bits of storage reads") {
  const Case c{{2, 150, 1, 2, 16, 24}};
  const ref::GdrInputs in = make_inputs(c, 420);
  DeviceQuirks views = test::device().plan().quirks, storage = views;
  views.texel_fetch_beats_storage_loads = true;
  storage.texel_fetch_beats_storage_loads = false;
  GpuCase gc(c, in, 430);
  const Run want = gc.run({}, storage);
  for (const auto& cuts : {std::vector<uint32_t>{}, std::vector<uint32_t>{C}}) {
    INFO(cuts.size() << " cuts");
    const Run got = GpuCase(c, in).run(cuts, views);
    CHECK(test::bit_identical(got.o, want.o));
    CHECK(test::bit_identical(got.sT, want.sT));
    require_identical(gc.backward(cuts, views), gc.backward({}, storage));
  }
}

// gated_delta_state runs the forward for its state alone, the graph's forward for o alone.
TEST_CASE("gated delta rule chunkwise forward without o or s_out gives the same bits") {
  const Case c{{2, 70, 1, 2, 16, 24}};
  const ref::GdrInputs in = make_inputs(c, 700);
  GpuCase gc(c, in);
  const DeviceQuirks& qk = test::device().plan().quirks;
  const std::size_t sf = gc.state_floats(), no = gc.o.size() / 4;
  Buffer state = test::garbage_buffer<float>(sf, "S"), alone = test::garbage_buffer<float>(sf, "S");
  Buffer o2 = test::garbage_buffer<float>(no, "o alone");
  const uint64_t wb = kernels::gated_delta_rule_wy_forward_workspace(c.shape);
  Buffer w1 = test::garbage_buffer<uint8_t>(wb, "w"), w2 = test::garbage_buffer<uint8_t>(wb, "w"),
         w3 = test::garbage_buffer<uint8_t>(wb, "w");
  std::vector<Dispatch> ds;
  for (auto d : {kernels::gated_delta_rule_wy_forward(qk, c.shape, gc.inputs(), gc.initial(),
                                                      gc.o.whole(), state.whole(), w1.whole()),
                 kernels::gated_delta_rule_wy_forward(qk, c.shape, gc.inputs(), gc.initial(), {},
                                                      alone.whole(), w2.whole()),
                 kernels::gated_delta_rule_wy_forward(qk, c.shape, gc.inputs(), gc.initial(),
                                                      o2.whole(), {}, w3.whole())})
    ds.insert(ds.end(), d.begin(), d.end());
  test::run_once(std::move(ds));
  CHECK(test::bit_identical(test::read<float>(alone, sf), test::read<float>(state, sf)));
  CHECK(test::bit_identical(test::read<float>(o2, no), test::read<float>(gc.o, no)));
}

// llvmpipe stops an invocation's loops after 65535 iterations in total: at the longest range the
// host allows, every block must still run (else S_T and the last outputs stop short).
TEST_CASE(
    "gated delta rule chunkwise forward at the longest range one call may run matches the "
    "reference") {
  DeviceQuirks q = test::device().plan().quirks;
  if (q.max_loop_iterations == 0) q.max_loop_iterations = 65535;
  const uint32_t steps = kernels::gated_delta_rule_wy_max_forward_steps(q, 64);
  REQUIRE(steps > 0);
  const Case c{{1, steps, 1, 1, 64, 2}, true, false};
  const ref::GdrInputs in = make_inputs(c, 500);
  std::vector<double> o, sT;
  ref::gated_delta_rule_forward(ref_shape(c.shape), in, o, sT);
  const Run gpu = GpuCase(c, in).run({}, q);
  test::require_close(gpu.o, o, 1e-4, 5e-6, "o");
  test::require_close(gpu.sT, sT, 1e-4, 5e-6, "S_T");
  GatedDeltaRuleShape longer = c.shape;
  longer.T = steps + C;
  GpuCase gc(c, in);
  REQUIRE_THROWS_WITH(kernels::gated_delta_rule_wy_forward(q, longer, gc.inputs(), {}, gc.o.whole(),
                                                           {}, gc.o.whole()),
                      Catch::Contains("split the range"));
}

// The same for the backward, whose serial passes are longer per block.
TEST_CASE(
    "gated delta rule chunkwise backward at the longest range one call may run matches the "
    "reference") {
  DeviceQuirks q = test::device().plan().quirks;
  if (q.max_loop_iterations == 0) q.max_loop_iterations = 65535;
  const uint32_t steps = kernels::gated_delta_rule_wy_max_backward_steps(q, 64);
  REQUIRE(steps > 0);
  const Case c{{1, steps, 1, 1, 64, 2}, true, false};
  const ref::GdrInputs in = make_inputs(c, 510);
  GpuCase gc(c, in, 520);
  const Grads gpu = gc.backward({}, q);
  ref::GdrGrads want;
  ref::gated_delta_rule_backward(ref_shape(c.shape), in, gc.d_o_, gc.ds_final_, want);
  test::require_close(gpu.dq, want.dq, 1e-4, 5e-6, "dq");
  test::require_close(gpu.dk, want.dk, 1e-4, 5e-6, "dk");
  test::require_close(gpu.dv, want.dv, 1e-4, 5e-6, "dv");
  test::require_close(gpu.dg, want.dg, 1e-4, 5e-6, "dg");
  test::require_close(gpu.dbeta, want.dbeta, 1e-4, 5e-6, "dbeta");
  test::require_close(gpu.ds0, want.ds0, 1e-4, 5e-6, "dS_0");
  GatedDeltaRuleShape longer = c.shape;
  longer.T = steps + C;
  const BufferSlice o = gc.o.whole();
  REQUIRE_THROWS_WITH(kernels::gated_delta_rule_wy_backward(q, longer, gc.inputs(), {}, o, {},
                                                            {o, o, o, o, o}, o, o, o),
                      Catch::Contains("split the range"));
}

TEST_CASE("gated delta rule chunkwise forward refuses ranges off the block grid") {
  const DeviceQuirks& q = test::device().plan().quirks;
  Buffer b = test::garbage_buffer<float>(16, "b");
  const kernels::GatedDeltaRuleInputs in{b.whole(), b.whole(), b.whole(), b.whole(), b.whole()};
  auto forward = [&](GatedDeltaRuleShape s) {
    kernels::gated_delta_rule_wy_forward(q, s, in, {}, b.whole(), b.whole(), b.whole());
  };
  REQUIRE_NOTHROW(forward({1, 2 * C + 5, 1, 1, 2, 2, C, 2 * C + 5}));
  REQUIRE_NOTHROW(forward({1, 2 * C + 5, 1, 1, 2, 2, 0, C}));
  REQUIRE_THROWS_WITH(forward({1, 2 * C, 1, 1, 2, 2, 1, C}), Catch::Contains("multiple of 64"));
  REQUIRE_THROWS_WITH(forward({1, 2 * C, 1, 1, 2, 2, 0, C + 1}), Catch::Contains("multiple of 64"));
  REQUIRE_THROWS_WITH(forward({1, 4, 2, 3, 2, 2}), Catch::Contains("multiple of key heads"));
}

// The workspace the host reports is what the kernels index: per (row, value head, block) A and M
// [64, 64], W, Kd, Qz, Kr and Qr [64, dk] and Ut [64, dv] (both rounded up to 4), ze [64].
TEST_CASE("gated delta rule chunkwise forward workspace size") {
  const uint64_t blocks = 2;  // 70 steps
  CHECK(kernels::gated_delta_rule_wy_forward_workspace({2, 200, 1, 3, 127, 38, 64, 134}) ==
        4ull * 2 * 3 * blocks * (64 * (2 * 64 + 5 * 128 + 40) + 64));
}

}  // namespace

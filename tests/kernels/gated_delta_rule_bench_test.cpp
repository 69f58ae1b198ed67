// Gated delta rule forward and backward at a Qwen3.5-0.8B linear-attention layer (16 key and 16
// value heads of 128, published config), batch 1, T = 256 (REMAT_BENCH_T to change), from GPU
// timestamps, with the time to compile each pipeline (run with MESA_SHADER_CACHE_DISABLE=true on
// Mesa, or a second run finds them cached). Every input is in use (an initial state, a final-state
// gradient, packed rows) and each output's bits are printed as a hash, so two builds of the
// kernels can be compared bit for bit at this shape. Hidden: run with
//   remat_gated_delta_rule_bench_test "[.bench]"
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/kernels/gated_delta_rule.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// Seconds to build the pipelines of `ds` (the executor builds them on construction), then the
// median over 3 timed runs (after one warm-up) of each dispatch's time.
struct Timing {
  double compile_s = 0;
  std::vector<double> ms;
};

Timing time_ms(std::vector<Dispatch> ds) {
  const auto start = std::chrono::steady_clock::now();
  Executor ex(test::kernels(), std::move(ds), ExecutorOptions{.timestamps = true});
  Timing t;
  t.compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ex.run();
  std::vector<std::vector<double>> runs;
  for (int i = 0; i < 3; ++i) {
    ex.run();
    runs.push_back(ex.dispatch_ms());
  }
  t.ms.resize(runs[0].size());
  for (std::size_t d = 0; d < t.ms.size(); ++d) {
    std::vector<double> v{runs[0][d], runs[1][d], runs[2][d]};
    std::sort(v.begin(), v.end());
    t.ms[d] = v[1];
  }
  return t;
}

// FNV-1a over the bits of a buffer's floats.
uint64_t bits_hash(const Buffer& b) {
  const auto v = test::read<float>(b, b.size() / sizeof(float));
  uint64_t h = 1469598103934665603ull;
  for (float f : v) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    for (int i = 0; i < 4; ++i) h = (h ^ ((u >> (8 * i)) & 0xFF)) * 1099511628211ull;
  }
  return h;
}

uint32_t bench_steps() {
  const char* v = std::getenv("REMAT_BENCH_T");
  return v && *v ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10)) : 256u;
}

// Examples of 100 to 299 tokens, packed back to back.
std::vector<uint32_t> packed_positions(uint32_t T) {
  std::vector<uint32_t> p(T);
  uint32_t at = 0, len = 150;
  for (uint32_t t = 0; t < T; ++t) {
    p[t] = at;
    if (++at >= len) at = 0, len = 100 + (len * 7) % 200;
  }
  return p;
}

}  // namespace

TEST_CASE("gated delta rule at a Qwen3.5-0.8B layer", "[.bench]") {
  std::printf("device: %s\n", test::device().info().name.c_str());
  const DeviceQuirks& q = test::device().plan().quirks;
  const kernels::GatedDeltaRuleShape s{1, bench_steps(), 16, 16, 128, 128};
  const std::size_t nqk = std::size_t(s.T) * s.Hk * s.dk, nv = std::size_t(s.T) * s.Hv * s.dv;
  const std::size_t ng = std::size_t(s.T) * s.Hv, ns = std::size_t(s.Hv) * s.dk * s.dv;
  Buffer qb = test::upload_buffer(test::random_floats(nqk, 1, -0.05f, 0.05f), "q");
  Buffer kb = test::upload_buffer(test::random_floats(nqk, 2, -0.15f, 0.15f), "k");
  Buffer vb = test::upload_buffer(test::random_floats(nv, 3), "v");
  Buffer gb = test::upload_buffer(test::random_floats(ng, 4, -1.0f, -0.01f), "g");
  Buffer bb = test::upload_buffer(test::random_floats(ng, 5, 0.05f, 0.95f), "beta");
  Buffer db = test::upload_buffer(test::random_floats(nv, 6), "do");
  Buffer s0 = test::upload_buffer(test::random_floats(ns, 7, -0.1f, 0.1f), "S_in");
  Buffer dsT = test::upload_buffer(test::random_floats(ns, 8), "dS_out");
  Buffer pos = test::upload_buffer(packed_positions(s.T), "positions");
  Buffer o = test::garbage_buffer<float>(nv, "o"), st = test::garbage_buffer<float>(ns, "S");
  Buffer dq = test::garbage_buffer<float>(nqk, "dq"), dk = test::garbage_buffer<float>(nqk, "dk");
  Buffer dv = test::garbage_buffer<float>(nv, "dv"), dg = test::garbage_buffer<float>(ng, "dg");
  Buffer dbeta = test::garbage_buffer<float>(ng, "dbeta");
  Buffer ds0 = test::garbage_buffer<float>(ns, "dS_in");
  const auto w = kernels::gated_delta_rule_backward_workspace(s);
  Buffer sw = test::garbage_buffer<uint8_t>(w.state_bytes, "state workspace");
  Buffer pw = test::garbage_buffer<uint8_t>(w.partial_bytes, "partial workspace");
  const kernels::GatedDeltaRuleInputs in{qb.whole(), kb.whole(), vb.whole(),
                                         gb.whole(), bb.whole(), pos.whole()};
  const Timing fwd =
      time_ms({kernels::gated_delta_rule_forward(q, s, in, s0.whole(), o.whole(), st.whole())});
  const Timing bwd = time_ms(kernels::gated_delta_rule_backward(
      q, s, in, s0.whole(), db.whole(), dsT.whole(),
      {dq.whole(), dk.whole(), dv.whole(), dg.whole(), dbeta.whole(), ds0.whole()}, sw.whole(),
      pw.whole()));
  std::printf("T %u: compile forward %.1f s, backward and reduction %.1f s\n", s.T, fwd.compile_s,
              bwd.compile_s);
  std::printf(
      "forward %.2f ms, backward %.2f ms (per-column pass %.2f, reduction %.2f); "
      "workspace %.1f + %.1f MiB\n",
      fwd.ms[0], bwd.ms[0] + bwd.ms[1], bwd.ms[0], bwd.ms[1], w.state_bytes / 1048576.0,
      w.partial_bytes / 1048576.0);
  std::printf("bits: o %016llx S %016llx dq %016llx dk %016llx dv %016llx\n",
              (unsigned long long)bits_hash(o), (unsigned long long)bits_hash(st),
              (unsigned long long)bits_hash(dq), (unsigned long long)bits_hash(dk),
              (unsigned long long)bits_hash(dv));
  std::printf("bits: dg %016llx dbeta %016llx dS_in %016llx\n", (unsigned long long)bits_hash(dg),
              (unsigned long long)bits_hash(dbeta), (unsigned long long)bits_hash(ds0));
}

// Gated delta rule forward and backward at a Qwen3.5-0.8B linear-attention layer (16 key and 16
// value heads of 128, published config), batch 1, T = 256 (REMAT_BENCH_T to change), from GPU
// timestamps, with the time to compile the pipelines (run with MESA_SHADER_CACHE_DISABLE=true on
// Mesa, or a second run finds them cached): head loops as the device gets them and the other way
// (in blocks on CPU drivers, unrolled on GPUs). Every input is in use (an initial state, a
// final-state gradient, packed rows) and each output's bits are printed as a hash, so two
// variants, or two builds, of the kernels can be compared bit for bit at this shape. Hidden:
//   remat_gated_delta_rule_bench_test "[.bench]"
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>

#include "runtime/kernels/gated_delta_rule.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// Wall and process CPU seconds since construction.
struct Clock {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  std::clock_t cpu = std::clock();
  double wall_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  }
  double cpu_s() const { return double(std::clock() - cpu) / CLOCKS_PER_SEC; }
};

double median3(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[1];
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

// One variant's outputs and executors: the forward, then the backward and its reduction.
struct Variant {
  const char* name;
  DeviceQuirks quirks;
  uint32_t unroll = 0;
  Buffer o, st, dq, dk, dv, dg, dbeta, ds0, sw, pw;
  std::unique_ptr<Executor> fwd, bwd;
  double compile_wall_s = 0, compile_cpu_s = 0;
  std::vector<double> wall, cpu;                    // per timed run of both executors
  std::vector<std::vector<double>> fwd_ms, bwd_ms;  // per dispatch, per timed run

  Variant(const char* n, const DeviceQuirks& q, const kernels::GatedDeltaRuleShape& s)
      : name(n),
        quirks(q),
        unroll(kernels::gated_delta_rule_head_unroll(q, s, true)),
        o(test::garbage_buffer<float>(std::size_t(s.T) * s.Hv * s.dv, "o")),
        st(test::garbage_buffer<float>(std::size_t(s.Hv) * s.dk * s.dv, "S")),
        dq(test::garbage_buffer<float>(std::size_t(s.T) * s.Hk * s.dk, "dq")),
        dk(test::garbage_buffer<float>(std::size_t(s.T) * s.Hk * s.dk, "dk")),
        dv(test::garbage_buffer<float>(std::size_t(s.T) * s.Hv * s.dv, "dv")),
        dg(test::garbage_buffer<float>(std::size_t(s.T) * s.Hv, "dg")),
        dbeta(test::garbage_buffer<float>(std::size_t(s.T) * s.Hv, "dbeta")),
        ds0(test::garbage_buffer<float>(std::size_t(s.Hv) * s.dk * s.dv, "dS_in")),
        sw(test::garbage_buffer<uint8_t>(
            kernels::gated_delta_rule_backward_workspace(s).state_bytes, "state workspace")),
        pw(test::garbage_buffer<uint8_t>(
            kernels::gated_delta_rule_backward_workspace(s).partial_bytes, "partial workspace")) {}

  // lavapipe compiles a pipeline's code at its first dispatch: the compile time is the first
  // run's (building the executors included) less a later run's, in wall and process CPU seconds
  // (steadier on a shared machine).
  void build(const kernels::GatedDeltaRuleShape& s, const kernels::GatedDeltaRuleInputs& in,
             BufferSlice s0, BufferSlice d_o, BufferSlice dsT) {
    const Clock first;
    fwd = std::make_unique<Executor>(test::kernels(),
                                     std::vector<Dispatch>{kernels::gated_delta_rule_forward(
                                         quirks, s, in, s0, o.whole(), st.whole())},
                                     ExecutorOptions{.timestamps = true});
    bwd = std::make_unique<Executor>(
        test::kernels(),
        kernels::gated_delta_rule_backward(
            quirks, s, in, s0, d_o, dsT,
            {dq.whole(), dk.whole(), dv.whole(), dg.whole(), dbeta.whole(), ds0.whole()},
            sw.whole(), pw.whole()),
        ExecutorOptions{.timestamps = true});
    fwd->run();
    bwd->run();
    compile_wall_s = first.wall_s(), compile_cpu_s = first.cpu_s();
  }

  void run() {
    const Clock c;
    fwd->run();
    bwd->run();
    wall.push_back(c.wall_s()), cpu.push_back(c.cpu_s());
    fwd_ms.push_back(fwd->dispatch_ms()), bwd_ms.push_back(bwd->dispatch_ms());
  }

  void report() const {
    const double col = median3({bwd_ms[0][0], bwd_ms[1][0], bwd_ms[2][0]});
    const double red = median3({bwd_ms[0][1], bwd_ms[1][1], bwd_ms[2][1]});
    std::printf("%s (head loops in blocks of %u):\n", name, unroll);
    std::printf("  compile %.1f s (%.1f s CPU), first run less a later one\n",
                compile_wall_s - median3(wall), compile_cpu_s - median3(cpu));
    std::printf("  forward %.2f ms, backward %.2f ms (per-column pass %.2f, reduction %.2f)\n",
                median3({fwd_ms[0][0], fwd_ms[1][0], fwd_ms[2][0]}), col + red, col, red);
    std::printf("  bits: o %016llx S %016llx dq %016llx dk %016llx\n",
                (unsigned long long)bits_hash(o), (unsigned long long)bits_hash(st),
                (unsigned long long)bits_hash(dq), (unsigned long long)bits_hash(dk));
    std::printf("  bits: dv %016llx dg %016llx dbeta %016llx dS_in %016llx\n",
                (unsigned long long)bits_hash(dv), (unsigned long long)bits_hash(dg),
                (unsigned long long)bits_hash(dbeta), (unsigned long long)bits_hash(ds0));
  }
};

}  // namespace

// The device's choice of head loops (blocks on CPU drivers) and the other one, timed in turns so
// a change in the machine's load weighs on both alike (REMAT_BENCH_VARIANTS=device: the device's
// choice alone).
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
  const kernels::GatedDeltaRuleInputs in{qb.whole(), kb.whole(), vb.whole(),
                                         gb.whole(), bb.whole(), pos.whole()};
  const auto w = kernels::gated_delta_rule_backward_workspace(s);
  std::printf("T %u, workspace %.1f + %.1f MiB\n", s.T, w.state_bytes / 1048576.0,
              w.partial_bytes / 1048576.0);

  DeviceQuirks other = q;
  other.barriers_are_expensive = !q.barriers_are_expensive;
  std::vector<std::unique_ptr<Variant>> variants;
  variants.push_back(std::make_unique<Variant>("device's choice", q, s));
  const char* only = std::getenv("REMAT_BENCH_VARIANTS");
  if (!(only && std::string(only) == "device"))
    variants.push_back(std::make_unique<Variant>("the other", other, s));
  for (auto& v : variants) v->build(s, in, s0.whole(), db.whole(), dsT.whole());
  for (int r = 0; r < 3; ++r)
    for (auto& v : variants) v->run();
  for (auto& v : variants) v->report();
}

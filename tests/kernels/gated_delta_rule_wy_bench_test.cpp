// The gated delta rule's forward at a Qwen3.5-0.8B linear-attention layer (16 key and 16 value
// heads of 128), batch 1, T = 512 (REMAT_BENCH_T to change): the sequential kernel
// (gated_delta_rule.h, head loops as the device gets them) against the chunkwise (WY) one
// (gated_delta_rule_wy.h), in one process, in alternating turns so the machine's load weighs on
// both alike; medians of 5 from GPU timestamps, the load average printed. The two outputs'
// largest difference is printed too. Hidden:
//   remat_gated_delta_rule_wy_bench_test "[.bench]"
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>

#include "runtime/kernels/gated_delta_rule_wy.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

uint32_t bench_steps() {
  const char* v = std::getenv("REMAT_BENCH_T");
  return v && *v ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10)) : 512u;
}

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

TEST_CASE("gated delta rule forward, sequential against chunkwise, at a Qwen3.5-0.8B layer",
          "[.bench]") {
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
  Buffer s0 = test::upload_buffer(test::random_floats(ns, 7, -0.1f, 0.1f), "S_in");
  Buffer pos = test::upload_buffer(packed_positions(s.T), "positions");
  const kernels::GatedDeltaRuleInputs in{qb.whole(), kb.whole(), vb.whole(),
                                         gb.whole(), bb.whole(), pos.whole()};
  Buffer o1 = test::garbage_buffer<float>(nv, "o"), o2 = test::garbage_buffer<float>(nv, "o");
  Buffer st1 = test::garbage_buffer<float>(ns, "S"), st2 = test::garbage_buffer<float>(ns, "S");
  Buffer w = test::garbage_buffer<uint8_t>(kernels::gated_delta_rule_wy_forward_workspace(s), "w");
  Executor seq(test::kernels(),
               {kernels::gated_delta_rule_forward(q, s, in, s0.whole(), o1.whole(), st1.whole())},
               ExecutorOptions{.timestamps = true});
  Executor wy(test::kernels(),
              kernels::gated_delta_rule_wy_forward(q, s, in, s0.whole(), o2.whole(), st2.whole(),
                                                   w.whole()),
              ExecutorOptions{.timestamps = true});
  seq.run(), wy.run();  // compile
  std::printf("T %u, load average before: %s\n", s.T, load_average().c_str());
  std::vector<double> seq_ms, wy_ms;
  std::vector<std::vector<double>> wy_parts(3);
  for (int r = 0; r < 5; ++r) {
    seq.run();
    seq_ms.push_back(seq.dispatch_ms()[0]);
    wy.run();
    const auto d = wy.dispatch_ms();
    wy_ms.push_back(std::accumulate(d.begin(), d.end(), 0.0));
    for (int i = 0; i < 3; ++i) wy_parts[i].push_back(d[i]);
  }
  std::printf("load average after: %s\n", load_average().c_str());
  std::printf(
      "sequential forward %.1f ms; chunkwise forward %.1f ms (prepare %.1f, solve %.1f, "
      "serial %.1f): %.2fx\n",
      median(seq_ms), median(wy_ms), median(wy_parts[0]), median(wy_parts[1]), median(wy_parts[2]),
      median(seq_ms) / median(wy_ms));
  const auto a = test::read<float>(o1, nv), b = test::read<float>(o2, nv);
  double worst = 0;
  for (std::size_t i = 0; i < nv; ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])));
  std::printf("largest |o difference|: %.3g\n", worst);
}

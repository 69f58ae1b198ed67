// The gated delta rule's forward and backward at a Qwen3.5-0.8B linear-attention layer (16 key and
// 16 value heads of 128), batch 1, T = 512 (REMAT_BENCH_T to change): the sequential kernel
// (gated_delta_rule.h, head loops as the device gets them) against the chunkwise (WY) one
// (gated_delta_rule_wy.h), in one process, in alternating turns so the machine's load weighs on
// both alike; medians of 5 from GPU timestamps, the load average printed. The two forms' largest
// output and gradient differences are printed too. Hidden:
//   remat_gated_delta_rule_wy_bench_test "[.bench]"
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
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
  Buffer db = test::upload_buffer(test::random_floats(nv, 6), "do");
  Buffer dsT = test::upload_buffer(test::random_floats(ns, 8), "dS_out");
  struct Grads {
    Buffer dq, dk, dv, dg, dbeta, ds0;
    explicit Grads(const kernels::GatedDeltaRuleShape& s)
        : dq(test::garbage_buffer<float>(std::size_t(s.T) * s.Hk * s.dk, "dq")),
          dk(test::garbage_buffer<float>(std::size_t(s.T) * s.Hk * s.dk, "dk")),
          dv(test::garbage_buffer<float>(std::size_t(s.T) * s.Hv * s.dv, "dv")),
          dg(test::garbage_buffer<float>(std::size_t(s.T) * s.Hv, "dg")),
          dbeta(test::garbage_buffer<float>(std::size_t(s.T) * s.Hv, "dbeta")),
          ds0(test::garbage_buffer<float>(std::size_t(s.Hv) * s.dk * s.dv, "dS_in")) {}
    kernels::GatedDeltaRuleGrads slices() const {
      return {dq.whole(), dk.whole(), dv.whole(), dg.whole(), dbeta.whole(), ds0.whole()};
    }
  } g1(s), g2(s);
  const auto sw = kernels::gated_delta_rule_backward_workspace(s);
  Buffer sw1 = test::garbage_buffer<uint8_t>(sw.state_bytes, "states");
  Buffer sw2 = test::garbage_buffer<uint8_t>(sw.partial_bytes, "partials");
  const auto ww = kernels::gated_delta_rule_wy_backward_workspace(s);
  Buffer ww1 = test::garbage_buffer<uint8_t>(ww.work_bytes, "work");
  Buffer ww2 = test::garbage_buffer<uint8_t>(ww.keep_bytes, "keep");
  Buffer ww3 = test::garbage_buffer<uint8_t>(ww.partial_bytes, "partials");
  std::printf("chunkwise backward scratch: %.1f + %.1f + %.1f MiB\n", ww.work_bytes / 1048576.0,
              ww.keep_bytes / 1048576.0, ww.partial_bytes / 1048576.0);
  Executor seq(test::kernels(),
               {kernels::gated_delta_rule_forward(q, s, in, s0.whole(), o1.whole(), st1.whole())},
               ExecutorOptions{.timestamps = true});
  Executor wy(test::kernels(),
              kernels::gated_delta_rule_wy_forward(q, s, in, s0.whole(), o2.whole(), st2.whole(),
                                                   w.whole()),
              ExecutorOptions{.timestamps = true});
  Executor seq_b(test::kernels(),
                 kernels::gated_delta_rule_backward(q, s, in, s0.whole(), db.whole(), dsT.whole(),
                                                    g1.slices(), sw1.whole(), sw2.whole()),
                 ExecutorOptions{.timestamps = true});
  Executor wy_b(
      test::kernels(),
      kernels::gated_delta_rule_wy_backward(q, s, in, s0.whole(), db.whole(), dsT.whole(),
                                            g2.slices(), ww1.whole(), ww2.whole(), ww3.whole()),
      ExecutorOptions{.timestamps = true});
  // lavapipe compiles a pipeline at its first dispatch: the first run less the median of the
  // later ones (run with MESA_SHADER_CACHE_DISABLE=true, or a second run finds them cached).
  const auto first = [](Executor& e) {
    const auto t0 = std::chrono::steady_clock::now();
    e.run();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const double first_seq = first(seq) + first(seq_b), first_wy = first(wy) + first(wy_b);
  std::printf("T %u, load average before: %s\n", s.T, load_average().c_str());
  auto total = [](const std::vector<double>& d) {
    return std::accumulate(d.begin(), d.end(), 0.0);
  };
  std::vector<double> seq_ms, wy_ms, seqb_ms, wyb_ms;
  std::vector<std::vector<double>> wy_parts(wy.dispatches().size()),
      wyb_parts(wy_b.dispatches().size());
  for (int r = 0; r < 5; ++r) {
    seq.run();
    seq_ms.push_back(seq.dispatch_ms()[0]);
    wy.run();
    const auto d = wy.dispatch_ms();
    wy_ms.push_back(total(d));
    for (std::size_t i = 0; i < d.size(); ++i) wy_parts[i].push_back(d[i]);
    seq_b.run();
    seqb_ms.push_back(total(seq_b.dispatch_ms()));
    wy_b.run();
    const auto e = wy_b.dispatch_ms();
    wyb_ms.push_back(total(e));
    for (std::size_t i = 0; i < e.size(); ++i) wyb_parts[i].push_back(e[i]);
  }
  std::printf("load average after: %s\n", load_average().c_str());
  std::printf(
      "first run less a later one (compile), forward and backward: sequential %.1f s, "
      "chunkwise %.1f s\n",
      first_seq - (median(seq_ms) + median(seqb_ms)) / 1000,
      first_wy - (median(wy_ms) + median(wyb_ms)) / 1000);
  std::printf("sequential forward %.1f ms; chunkwise forward %.1f ms: %.2fx\n", median(seq_ms),
              median(wy_ms), median(seq_ms) / median(wy_ms));
  for (std::size_t i = 0; i < wy_parts.size(); ++i)
    std::printf("  %-48s %8.1f ms\n", wy.dispatches()[i].label.c_str(), median(wy_parts[i]));
  std::printf("sequential backward %.1f ms; chunkwise backward %.1f ms: %.2fx\n", median(seqb_ms),
              median(wyb_ms), median(seqb_ms) / median(wyb_ms));
  for (std::size_t i = 0; i < wyb_parts.size(); ++i)
    std::printf("  %-48s %8.1f ms\n", wy_b.dispatches()[i].label.c_str(), median(wyb_parts[i]));
  auto worst = [](const Buffer& x, const Buffer& y) {
    const auto a = test::read<float>(x, x.size() / 4), b = test::read<float>(y, y.size() / 4);
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double d = std::abs(double(a[i]) - double(b[i]));
      m = std::isnan(d) ? d : std::max(m, d);  // NaN: a value not written
      if (std::isnan(d)) break;
    }
    return m;
  };
  std::printf(
      "largest differences: o %.3g, S %.3g, dq %.3g, dk %.3g, dv %.3g, dg %.3g, dbeta "
      "%.3g, dS_in %.3g\n",
      worst(o1, o2), worst(st1, st2), worst(g1.dq, g2.dq), worst(g1.dk, g2.dk), worst(g1.dv, g2.dv),
      worst(g1.dg, g2.dg), worst(g1.dbeta, g2.dbeta), worst(g1.ds0, g2.ds0));
}

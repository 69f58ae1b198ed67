// Gated delta rule forward and backward at a Qwen3.5-0.8B linear-attention layer (16 key and 16
// value heads of 128, published config), batch 1, T = 256, from GPU timestamps. Hidden: run with
//   remat_gated_delta_rule_bench_test "[.bench]"
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>

#include "runtime/kernels/gated_delta_rule.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// Median over 3 timed runs (after one warm-up) of each dispatch's time.
std::vector<double> time_ms(std::vector<Dispatch> ds) {
  Executor ex(test::kernels(), std::move(ds), ExecutorOptions{.timestamps = true});
  ex.run();
  std::vector<std::vector<double>> runs;
  for (int i = 0; i < 3; ++i) {
    ex.run();
    runs.push_back(ex.dispatch_ms());
  }
  std::vector<double> median(runs[0].size());
  for (std::size_t d = 0; d < median.size(); ++d) {
    std::vector<double> v{runs[0][d], runs[1][d], runs[2][d]};
    std::sort(v.begin(), v.end());
    median[d] = v[1];
  }
  return median;
}

}  // namespace

TEST_CASE("gated delta rule at a Qwen3.5-0.8B layer, T = 256", "[.bench]") {
  std::printf("device: %s\n", test::device().info().name.c_str());
  const DeviceQuirks& q = test::device().plan().quirks;
  const kernels::GatedDeltaRuleShape s{1, 256, 16, 16, 128, 128};
  const std::size_t nqk = std::size_t(s.T) * s.Hk * s.dk, nv = std::size_t(s.T) * s.Hv * s.dv;
  const std::size_t ng = std::size_t(s.T) * s.Hv, ns = std::size_t(s.Hv) * s.dk * s.dv;
  Buffer qb = test::upload_buffer(test::random_floats(nqk, 1, -0.05f, 0.05f), "q");
  Buffer kb = test::upload_buffer(test::random_floats(nqk, 2, -0.15f, 0.15f), "k");
  Buffer vb = test::upload_buffer(test::random_floats(nv, 3), "v");
  Buffer gb = test::upload_buffer(test::random_floats(ng, 4, -1.0f, -0.01f), "g");
  Buffer bb = test::upload_buffer(test::random_floats(ng, 5, 0.05f, 0.95f), "beta");
  Buffer db = test::upload_buffer(test::random_floats(nv, 6), "do");
  Buffer o = test::garbage_buffer<float>(nv, "o"), st = test::garbage_buffer<float>(ns, "S");
  Buffer dq = test::garbage_buffer<float>(nqk, "dq"), dk = test::garbage_buffer<float>(nqk, "dk");
  Buffer dv = test::garbage_buffer<float>(nv, "dv"), dg = test::garbage_buffer<float>(ng, "dg");
  Buffer dbeta = test::garbage_buffer<float>(ng, "dbeta");
  const auto w = kernels::gated_delta_rule_backward_workspace(s);
  Buffer sw = test::garbage_buffer<uint8_t>(w.state_bytes, "state workspace");
  Buffer pw = test::garbage_buffer<uint8_t>(w.partial_bytes, "partial workspace");
  const kernels::GatedDeltaRuleInputs in{qb.whole(), kb.whole(), vb.whole(), gb.whole(),
                                         bb.whole()};
  const double fwd =
      time_ms({kernels::gated_delta_rule_forward(q, s, in, {}, o.whole(), st.whole())})[0];
  const auto bwd = time_ms(kernels::gated_delta_rule_backward(
      q, s, in, {}, db.whole(), {}, {dq.whole(), dk.whole(), dv.whole(), dg.whole(), dbeta.whole()},
      sw.whole(), pw.whole()));
  std::printf(
      "forward %.2f ms, backward %.2f ms (per-column pass %.2f, reduction %.2f); "
      "workspace %.1f + %.1f MiB\n",
      fwd, bwd[0] + bwd[1], bwd[0], bwd[1], w.state_bytes / 1048576.0, w.partial_bytes / 1048576.0);
}

// Throughput of the Gated DeltaNet layer's small kernels (causal conv1d, L2 norm, gates, gated
// RMSNorm) and the gated attention's sigmoid gate at Qwen3.5-0.8B's shapes over B=1, T=512, from
// GPU timestamps. Hidden: run with
//   remat_gdn_kernels_bench_test "[.bench]"
// GB/s counts the bytes each kernel must move at least once (inputs read, outputs written).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "runtime/kernels/causal_conv1d.h"
#include "runtime/kernels/gated_rmsnorm.h"
#include "runtime/kernels/gdn_gates.h"
#include "runtime/kernels/l2norm.h"
#include "runtime/kernels/sigmoid_gate.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// Median over 3 timed runs (after one warm-up) of the summed dispatch times.
double time_ms(std::vector<Dispatch> ds) {
  Executor ex(test::kernels(), std::move(ds), ExecutorOptions{.timestamps = true});
  ex.run();
  std::vector<double> runs;
  for (int i = 0; i < 3; ++i) {
    ex.run();
    double sum = 0;
    for (double ms : ex.dispatch_ms()) sum += ms;
    runs.push_back(sum);
  }
  std::sort(runs.begin(), runs.end());
  return runs[1];
}

void report(const std::string& name, double ms, double bytes) {
  std::printf("%-34s %9.3f ms %8.2f GB/s\n", name.c_str(), ms, bytes / (ms * 1e-3) / 1e9);
}

Buffer floats(std::size_t n, const char* name, uint64_t seed) {
  return test::upload_buffer(test::random_floats(n, seed), name);
}

}  // namespace

TEST_CASE("Gated DeltaNet kernel throughput at Qwen3.5-0.8B", "[.bench]") {
  // Qwen3.5-0.8B: 16 key and 16 value heads of 128 (conv channels 2·2048 + 2048), gated
  // attention with 8 heads of 256.
  const uint32_t N = 512, Hk = 16, Hv = 16, Dk = 128, Dv = 128, C = 2 * Hk * Dk + Hv * Dv;
  const double f = sizeof(float);
  const auto ow = kernels::GradWrite::overwrite;
  std::printf("device: %s\n", test::device().info().name.c_str());

  Buffer x = floats(N * C, "x", 1), y = floats(N * C, "y", 2), dy = floats(N * C, "dy", 3),
         dx = floats(N * C, "dx", 4), w = floats(C * 4, "w", 5), dw = floats(C * 4, "dw", 6);
  const kernels::CausalConv1dShape cs{1, N, C, 4};
  const double nc = double(N) * C * f;
  report("causal_conv1d_forward",
         time_ms({kernels::causal_conv1d_forward(cs, x.whole(), w.whole(), y.whole())}), 2 * nc);
  report("causal_conv1d_backward_input",
         time_ms({kernels::causal_conv1d_backward_input(cs, dy.whole(), x.whole(), w.whole(),
                                                        dx.whole(), ow)}),
         3 * nc);
  report("causal_conv1d_backward_weight",
         time_ms({kernels::causal_conv1d_backward_weight(
             test::device().plan().quirks, cs, dy.whole(), x.whole(), w.whole(), dw.whole(), ow)}),
         2 * nc);

  // q (scaled) and k read in place from the conv output.
  const kernels::L2normShape ls{N, 2 * Hk, Dk, C, 0, 1e-6f, 1.0f};
  const double nqk = double(N) * 2 * Hk * Dk * f;
  report("l2norm_forward (q and k)", time_ms({kernels::l2norm_forward(ls, y.whole(), x.whole())}),
         2 * nqk);
  report("l2norm_backward (q and k)",
         time_ms({kernels::l2norm_backward(ls, dy.whole(), y.whole(), dx.whole(), ow)}), 3 * nqk);

  Buffer a = floats(N * Hv, "a", 7), b = floats(N * Hv, "b", 8), al = floats(Hv, "A_log", 9),
         dt = floats(Hv, "dt_bias", 10), g = floats(N * Hv, "g", 11),
         beta = floats(N * Hv, "beta", 12), dal = floats(Hv, "dA_log", 13),
         ddt = floats(Hv, "ddt_bias", 14);
  const kernels::GdnGatesShape gs{N, Hv};
  const double ng = double(N) * Hv * f;
  report("gdn_gates_forward",
         time_ms({kernels::gdn_gates_forward(gs, a.whole(), b.whole(), al.whole(), dt.whole(),
                                             g.whole(), beta.whole())}),
         4 * ng);
  report("gdn_gates_backward",
         time_ms({kernels::gdn_gates_backward(gs, g.whole(), beta.whole(), a.whole(), b.whole(),
                                              al.whole(), dt.whole(),
                                              {x.whole(), y.whole(), dal.whole(), ddt.whole()})}),
         6 * ng);

  // o and z [N·Hv, Dv] in the first N·Hv·Dv floats of the conv-sized buffers.
  Buffer rstd = floats(N * Hv, "rstd", 15), wn = floats(Dv, "w", 16), dwn = floats(Dv, "dw", 17),
         dz = floats(N * C, "dz", 18);
  const kernels::GatedRmsnormShape ns{N * Hv, Dv, 1e-6f};
  const double no = double(N) * Hv * Dv * f;
  report("gated_rmsnorm_forward",
         time_ms({kernels::gated_rmsnorm_forward(ns, x.whole(), y.whole(), wn.whole(), dx.whole(),
                                                 rstd.whole())}),
         3 * no);
  report("gated_rmsnorm_backward",
         time_ms({kernels::gated_rmsnorm_backward(ns, dy.whole(), x.whole(), y.whole(), wn.whole(),
                                                  rstd.whole(), dx.whole(), dz.whole(), ow, ow)}),
         5 * no);
  report("gated_rmsnorm_backward_weight",
         time_ms({kernels::gated_rmsnorm_backward_weight(ns, dy.whole(), x.whole(), y.whole(),
                                                         rstd.whole(), dwn.whole(), ow)}),
         3 * no);

  // Gated attention: 8 heads of 256, the gate in q_proj's [q | gate] per head.
  const uint32_t H = 8, D = 256, count = N * H * D;
  const kernels::SigmoidGateShape ss{count, D, 2 * D, D};
  const double nx = double(count) * f;
  report("sigmoid_gate_forward",
         time_ms({kernels::sigmoid_gate_forward(ss, x.whole(), y.whole(), dx.whole())}), 3 * nx);
  report("sigmoid_gate_backward",
         time_ms({kernels::sigmoid_gate_backward(ss, dy.whole(), x.whole(), y.whole(), dx.whole(),
                                                 dz.whole(), ow, ow)}),
         5 * nx);
}

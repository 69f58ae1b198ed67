// One Gated DeltaNet layer's kernels against one gated-attention layer's attention kernels, forward
// and backward, at Qwen3.5-0.8B's widths over B=1, T=512 (REMAT_BENCH_T to change), from GPU
// timestamps, in one run. DeltaNet (16 key and 16 value heads of 128, conv channels 2·2048 +
// 2048): causal conv1d, the L2 norms of q and k, the gates, the delta rule (v read in place in
// the conv output) and the gated RMSNorm. Gated attention (8 query heads over 2 key/value heads
// of 256): grouped-query attention and the sigmoid output gate. The projections are matmuls of
// about the same size in both and are left out; so are the attention layer's q/k norms and RoPE.
// The delta rule runs in its sequential form (gated_delta_rule.h) and in its chunkwise one
// (gated_delta_rule_wy.h, the same layer otherwise). The layers are timed in turns (after one
// warm-up run each, which compiles the pipelines) so a change in the machine's load weighs on both
// alike; medians of 3 runs per dispatch. Hidden:
//   remat_gdn_layer_bench_test "[.bench]"
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/kernels/attention.h"
#include "runtime/kernels/causal_conv1d.h"
#include "runtime/kernels/gated_delta_rule.h"
#include "runtime/kernels/gated_delta_rule_wy.h"
#include "runtime/kernels/gated_rmsnorm.h"
#include "runtime/kernels/gdn_gates.h"
#include "runtime/kernels/l2norm.h"
#include "runtime/kernels/sigmoid_gate.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

constexpr uint32_t Hk = 16, Hv = 16, Dk = 128, Dv = 128, K = 2 * Hk * Dk, C = K + Hv * Dv;
constexpr uint32_t NH = 8, KV = 2, D = 256;
const auto kOverwrite = kernels::GradWrite::overwrite;

uint32_t bench_steps() {
  const char* v = std::getenv("REMAT_BENCH_T");
  return v && *v ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10)) : 512u;
}

Buffer floats(std::size_t n, const char* name, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  return test::upload_buffer(test::random_floats(n, seed, lo, hi), name);
}

// A layer's buffers and its forward-then-backward dispatches, one label each.
struct Layer {
  std::vector<Buffer> buffers;
  std::vector<Dispatch> dispatches;
  BufferSlice add(std::size_t n, const char* name, uint64_t seed, float lo = -1.0f,
                  float hi = 1.0f) {
    buffers.push_back(floats(n, name, seed, lo, hi));
    return buffers.back().whole();
  }
  BufferSlice scratch(uint64_t bytes, const char* name) {
    buffers.push_back(test::garbage_buffer<uint8_t>(bytes, name));
    return buffers.back().whole();
  }
};

Layer deltanet(const DeviceQuirks& q, uint32_t N, bool chunkwise) {
  Layer l;
  l.buffers.reserve(40);
  const BufferSlice x = l.add(N * C, "qkv", 1), w = l.add(C * 4, "conv w", 2, -0.5f, 0.5f);
  const BufferSlice conv = l.add(N * C, "conv", 3), qn = l.add(N * K / 2, "q", 4),
                    kn = l.add(N * K / 2, "k", 5);
  const BufferSlice a = l.add(N * Hv, "a", 6), b = l.add(N * Hv, "b", 7),
                    alog = l.add(Hv, "A_log", 8), dt = l.add(Hv, "dt_bias", 9);
  const BufferSlice g = l.add(N * Hv, "g", 10), beta = l.add(N * Hv, "beta", 11);
  const BufferSlice o = l.add(N * Hv * Dv, "o", 12), z = l.add(N * Hv * Dv, "z", 13),
                    wn = l.add(Dv, "norm w", 14), y = l.add(N * Hv * Dv, "y", 15),
                    rstd = l.add(N * Hv, "rstd", 16);
  const kernels::CausalConv1dShape cs{1, N, C, 4};
  const kernels::L2normShape qs{N, Hk, Dk, C, 0, 1e-6f, 1.0f / std::sqrt(float(Dk))};
  const kernels::L2normShape ks{N, Hk, Dk, C, K / 2, 1e-6f, 1.0f};
  const kernels::GdnGatesShape gs{N, Hv};
  kernels::GatedDeltaRuleShape ds{1, N, Hk, Hv, Dk, Dv};
  ds.v_stride = C, ds.v_offset = K;
  const kernels::GatedRmsnormShape ns{N * Hv, Dv, 1e-6f};
  const kernels::GatedDeltaRuleInputs in{qn, kn, conv, g, beta};
  auto& d = l.dispatches;
  d.push_back(kernels::causal_conv1d_forward(cs, x, w, conv));
  d.push_back(kernels::l2norm_forward(qs, conv, qn));
  d.push_back(kernels::l2norm_forward(ks, conv, kn));
  d.push_back(kernels::gdn_gates_forward(gs, a, b, alog, dt, g, beta));
  if (chunkwise) {
    for (Dispatch& f : kernels::gated_delta_rule_wy_forward(
             q, ds, in, {}, o, {},
             l.scratch(kernels::gated_delta_rule_wy_forward_workspace(ds), "work")))
      d.push_back(std::move(f));
  } else {
    d.push_back(
        kernels::gated_delta_rule_forward(q, ds, in, {}, o, l.scratch(4ull * Hv * Dk * Dv, "S")));
  }
  d.push_back(kernels::gated_rmsnorm_forward(ns, o, z, wn, y, rstd));

  const BufferSlice dy = l.add(N * Hv * Dv, "dy", 20), d_o = l.add(N * Hv * Dv, "do", 21),
                    dz = l.add(N * Hv * Dv, "dz", 22), dwn = l.add(Dv, "norm dw", 23);
  const BufferSlice dconv = l.add(N * C, "dconv", 24), dq = l.add(N * K / 2, "dq", 25),
                    dk = l.add(N * K / 2, "dk", 26), dg = l.add(N * Hv, "dg", 27),
                    dbeta = l.add(N * Hv, "dbeta", 28);
  const BufferSlice da = l.add(N * Hv, "da", 29), db = l.add(N * Hv, "db", 30),
                    dalog = l.add(Hv, "dA_log", 31), ddt = l.add(Hv, "ddt_bias", 32);
  const BufferSlice dx = l.add(N * C, "dqkv", 33), dw = l.add(C * 4, "conv dw", 34);
  d.push_back(
      kernels::gated_rmsnorm_backward(ns, dy, o, z, wn, rstd, d_o, dz, kOverwrite, kOverwrite));
  d.push_back(kernels::gated_rmsnorm_backward_weight(ns, dy, o, z, rstd, dwn, kOverwrite));
  if (chunkwise) {
    const auto wb = kernels::gated_delta_rule_wy_backward_workspace(ds);
    for (Dispatch& r : kernels::gated_delta_rule_wy_backward(
             q, ds, in, {}, d_o, {}, {dq, dk, dconv, dg, dbeta}, l.scratch(wb.work_bytes, "work"),
             l.scratch(wb.keep_bytes, "keep"), l.scratch(wb.partial_bytes, "partials")))
      d.push_back(std::move(r));
  } else {
    const auto wb = kernels::gated_delta_rule_backward_workspace(ds);
    for (Dispatch& r : kernels::gated_delta_rule_backward(
             q, ds, in, {}, d_o, {}, {dq, dk, dconv, dg, dbeta},
             l.scratch(wb.state_bytes, "states"), l.scratch(wb.partial_bytes, "partials")))
      d.push_back(std::move(r));
  }
  d.push_back(kernels::gdn_gates_backward(gs, dg, dbeta, a, b, alog, dt, {da, db, dalog, ddt}));
  d.push_back(kernels::l2norm_backward(qs, dq, conv, dconv, kOverwrite));
  d.push_back(kernels::l2norm_backward(ks, dk, conv, dconv, kOverwrite));
  d.push_back(kernels::causal_conv1d_backward_input(cs, dconv, x, w, dx, kOverwrite));
  d.push_back(kernels::causal_conv1d_backward_weight(q, cs, dconv, x, w, dw, kOverwrite));
  return l;
}

Layer gated_attention(const DeviceQuirks& q, uint32_t N) {
  Layer l;
  l.buffers.reserve(16);
  // q_proj's output holds per head D query floats then D gate floats.
  const BufferSlice qg = l.add(N * NH * 2 * D, "q|gate", 1), qr = l.add(N * NH * D, "q", 2),
                    k = l.add(N * KV * D, "k", 3), v = l.add(N * KV * D, "v", 4);
  const BufferSlice att = l.add(N * NH * D, "attn", 5), lse = l.add(NH * N, "lse", 6),
                    y = l.add(N * NH * D, "gated", 7);
  const kernels::AttentionShape as{1, N, NH * D, NH, KV};
  const kernels::SigmoidGateShape ss{N * NH * D, D, 2 * D, D};
  auto& d = l.dispatches;
  d.push_back(kernels::gqa_attention_forward(q, as, qr, k, v, att, lse));
  d.push_back(kernels::sigmoid_gate_forward(ss, att, qg, y));

  const BufferSlice dy = l.add(N * NH * D, "dy", 10), datt = l.add(N * NH * D, "dattn", 11),
                    dqg = l.add(N * NH * 2 * D, "dq|gate", 12), dq = l.add(N * NH * D, "dq", 13),
                    dk = l.add(N * KV * D, "dk", 14), dv = l.add(N * KV * D, "dv", 15);
  d.push_back(kernels::sigmoid_gate_backward(ss, dy, att, qg, datt, dqg, kOverwrite, kOverwrite));
  d.push_back(
      kernels::gqa_attention_backward(q, as, datt, qr, k, v, att, lse, dq, dk, dv, kOverwrite));
  return l;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Per dispatch, the median over `runs` turns of both executors.
std::vector<std::vector<double>> time_in_turns(std::vector<Executor*> ex, int runs) {
  for (Executor* e : ex) e->run();
  std::vector<std::vector<std::vector<double>>> ms(ex.size());
  for (int r = 0; r < runs; ++r)
    for (std::size_t i = 0; i < ex.size(); ++i) {
      ex[i]->run();
      const auto t = ex[i]->dispatch_ms();
      ms[i].resize(t.size());
      for (std::size_t d = 0; d < t.size(); ++d) ms[i][d].push_back(t[d]);
    }
  std::vector<std::vector<double>> out(ex.size());
  for (std::size_t i = 0; i < ex.size(); ++i)
    for (const auto& d : ms[i]) out[i].push_back(median(d));
  return out;
}

double report(const Executor& ex, const std::vector<double>& ms) {
  double sum = 0;
  for (std::size_t d = 0; d < ms.size(); ++d) {
    std::printf("  %-36s %10.2f ms\n", ex.dispatches()[d].label.c_str(), ms[d]);
    sum += ms[d];
  }
  std::printf("  %-36s %10.2f ms\n", "total", sum);
  return sum;
}

}  // namespace

TEST_CASE("Gated DeltaNet layer against gated attention at Qwen3.5-0.8B", "[.bench]") {
  const DeviceQuirks& q = test::device().plan().quirks;
  const uint32_t N = bench_steps();
  std::printf("device: %s, B 1, T %u\n", test::device().info().name.c_str(), N);
  Layer gdn = deltanet(q, N, false), wy = deltanet(q, N, true), att = gated_attention(q, N);
  Executor gdn_ex(test::kernels(), gdn.dispatches, ExecutorOptions{.timestamps = true});
  Executor wy_ex(test::kernels(), wy.dispatches, ExecutorOptions{.timestamps = true});
  Executor att_ex(test::kernels(), att.dispatches, ExecutorOptions{.timestamps = true});
  const auto ms = time_in_turns({&gdn_ex, &wy_ex, &att_ex}, 3);
  std::printf("Gated DeltaNet layer, sequential delta rule (forward, then backward):\n");
  const double g = report(gdn_ex, ms[0]);
  std::printf("Gated DeltaNet layer, chunkwise delta rule (forward, then backward):\n");
  const double w = report(wy_ex, ms[1]);
  std::printf("gated attention layer (forward, then backward):\n");
  const double a = report(att_ex, ms[2]);
  std::printf("DeltaNet / attention: sequential %.2f, chunkwise %.2f\n", g / a, w / a);
}

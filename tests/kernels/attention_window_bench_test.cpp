// Sliding-window attention against whole causal rows, from GPU timestamps (median of 5 runs): the
// kernels skip the key blocks outside each query's window, so a window of w keys in rows of T costs
// about (T² - (T - w)²) / T² of a whole row. Hidden: run with
//   remat_attention_window_bench_test "[.bench]"
// At Gemma 3 1B's attention shape: 4 query heads over 1 key/value head of 256, B 1, T 2048,
// its local layers' window 512 (scale query_pre_attn_scalar^-0.5 = 256^-0.5).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "runtime/kernels/attention.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Forward and backward of each executor, timed in turns (after one warm-up run each) so that a
// change in the machine's load weighs on both alike: the median of `runs` per dispatch.
std::vector<std::vector<double>> time_ms(std::vector<std::unique_ptr<Executor>>& ex, int runs) {
  for (auto& e : ex) e->run();
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

}  // namespace

TEST_CASE("windowed attention against whole causal rows at Gemma 3 1B's shape", "[.bench]") {
  std::printf("device: %s\n", test::device().info().name.c_str());
  const DeviceQuirks& q = test::device().plan().quirks;
  const uint32_t B = 1, T = 2048, NH = 4, KV = 1, D = 256;
  const std::size_t nq = std::size_t(B) * T * NH * D, nkv = std::size_t(B) * T * KV * D;
  const std::size_t nl = std::size_t(B) * NH * T;
  Buffer qb = test::upload_buffer(test::random_floats(nq, 1), "q");
  Buffer kb = test::upload_buffer(test::random_floats(nkv, 2), "k");
  Buffer vb = test::upload_buffer(test::random_floats(nkv, 3), "v");
  Buffer db = test::upload_buffer(test::random_floats(nq, 4), "dout");
  Buffer out = test::garbage_buffer<float>(nq, "out"), lse = test::garbage_buffer<float>(nl, "lse");
  Buffer dq = test::garbage_buffer<float>(nq, "dq"), dk = test::garbage_buffer<float>(nkv, "dk"),
         dv = test::garbage_buffer<float>(nkv, "dv");
  std::vector<std::unique_ptr<Executor>> ex;
  for (uint32_t window : {0u, 512u}) {
    const kernels::AttentionShape s{B, T, NH * D, NH, KV, window, 0.0625f};
    ex.push_back(std::make_unique<Executor>(
        test::kernels(),
        std::vector<Dispatch>{
            kernels::gqa_attention_forward(q, s, qb.whole(), kb.whole(), vb.whole(), out.whole(),
                                           lse.whole()),
            kernels::gqa_attention_backward(q, s, db.whole(), qb.whole(), kb.whole(), vb.whole(),
                                            out.whole(), lse.whole(), dq.whole(), dk.whole(),
                                            dv.whole(), kernels::GradWrite::overwrite)},
        ExecutorOptions{.timestamps = true}));
  }
  const auto t = time_ms(ex, 5);
  const double ms[2][2] = {{t[0][0], t[0][1]}, {t[1][0], t[1][1]}};
  const double cut = double(T - 512) * (T - 512), pairs = double(T) * T;
  std::printf(
      "B 1 T 2048, 4/1 heads of 256: forward %.1f -> %.1f ms (%.2fx)  backward %.1f -> "
      "%.1f ms (%.2fx)  forward+backward %.1f -> %.1f ms (%.2fx; keys visited %.2fx)\n",
      ms[0][0], ms[1][0], ms[0][0] / ms[1][0], ms[0][1], ms[1][1], ms[0][1] / ms[1][1],
      ms[0][0] + ms[0][1], ms[1][0] + ms[1][1], (ms[0][0] + ms[0][1]) / (ms[1][0] + ms[1][1]),
      pairs / (pairs - cut));
}

// The `tiny` step (L4 C128 H4 V256, B=8 T=64, no checkpoints) with bias gradients summed in the
// weight gradients' dispatches (SessionConfig::fused_bias_grad) and with a dispatch of their
// own, in one process, one step of each in turn: on a machine shared with other work the load
// moves between two runs of separate binaries by more than this change, while steps taken in
// turn see the same load. Hidden: `remat_fused_bias_grad_bench_test "[.bench]"`; it prints
// figures and asserts only that both sessions train the same bits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Timing {
  std::vector<double> wall, gpu;
};

}  // namespace

TEST_CASE("tiny steps with and without the fused bias gradient, taken in turn", "[.bench]") {
  SessionConfig c;
  c.model = ModelConfig::preset("tiny");
  c.shape.batch = 8;
  c.shape.seq = 64;
  c.timestamps = true;
  c.measure_matmul_tiles = false;  // the device's tiles for both: the same matmuls
  std::unique_ptr<Session> s[2];
  for (int f = 0; f < 2; ++f) {
    c.fused_bias_grad = f == 1;
    s[f] = std::make_unique<Session>(test::device(), c);
  }
  const std::size_t n = std::size_t(c.shape.batch) * c.shape.seq;
  const auto tokens = test::random_indices(n, 1, uint32_t(c.model.vocab));
  const auto targets = test::random_indices(n, 2, uint32_t(c.model.vocab));
  Timing t[2];
  const int warmup = 2, steps = 40;
  for (int i = 0; i < warmup + steps; ++i)
    for (int f = 0; f < 2; ++f) {
      const auto t0 = std::chrono::steady_clock::now();
      const float loss = s[f]->step(tokens, targets);
      const double wall =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      REQUIRE(std::isfinite(loss));
      if (i < warmup) continue;
      double gpu = 0;
      for (const auto& d : s[f]->dispatch_ms()) gpu += d.ms;
      t[f].wall.push_back(wall);
      t[f].gpu.push_back(gpu);
    }
  const auto a = s[0]->parameters(), b = s[1]->parameters();
  for (std::size_t i = 0; i < a.size(); ++i)
    REQUIRE(std::memcmp(a[i].second.data(), b[i].second.data(),
                        a[i].second.size() * sizeof(float)) == 0);
  int faster = 0;
  for (int i = 0; i < steps; ++i) faster += t[1].gpu[i] < t[0].gpu[i];
  for (int f = 0; f < 2; ++f)
    std::printf("%-24s %3zu dispatches: median %.1f ms/step wall, %.1f ms in timed dispatches\n",
                f ? "bias grad in dW" : "bias grad on its own", s[f]->dispatch_count(),
                median(t[f].wall), median(t[f].gpu));
  std::printf("fused faster in %d of %d steps taken in turn\n", faster, steps);
}

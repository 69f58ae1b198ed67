// Throughput of the embedding, LayerNorm, GELU, residual, dropout and cross-entropy kernels at a
// GPT-2-small shape (B=4, T=64, C=768, V=50257), from GPU timestamps. Hidden: run with
//   remat_training_kernels_bench_test "[.bench]"
// GB/s counts the bytes each kernel must move at least once (inputs read, outputs written).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "runtime/kernels/cross_entropy.h"
#include "runtime/kernels/dropout.h"
#include "runtime/kernels/embedding.h"
#include "runtime/kernels/gelu.h"
#include "runtime/kernels/layernorm.h"
#include "runtime/kernels/residual.h"
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
  std::printf("%-40s %9.3f ms %8.2f GB/s\n", name.c_str(), ms, bytes / (ms * 1e-3) / 1e9);
}

Buffer floats(std::size_t n, const char* name, uint64_t seed) {
  return test::upload_buffer(test::random_floats(n, seed), name);
}

}  // namespace

TEST_CASE("training kernel throughput at GPT-2 small", "[.bench]") {
  const uint32_t B = 4, T = 64, C = 768, V = 50257, ctx = 1024, BT = B * T;
  const double f = sizeof(float), n = double(BT) * C;
  const DeviceQuirks& q = test::device().plan().quirks;
  std::printf("device: %s\n", test::device().info().name.c_str());

  Buffer x = floats(BT * C, "x", 1), y = floats(BT * C, "y", 2), dy = floats(BT * C, "dy", 3),
         dx = floats(BT * C, "dx", 4), w = floats(C, "w", 5), b = floats(C, "b", 6),
         dw = floats(C, "dw", 7), db = floats(C, "db", 8), mean = floats(BT, "mean", 9),
         rstd = floats(BT, "rstd", 10);
  kernels::LayernormShape ls{BT, C};
  report("layernorm_forward",
         time_ms({kernels::layernorm_forward(test::device().plan().quirks, ls, x.whole(), w.whole(),
                                             b.whole(), y.whole(), mean.whole(), rstd.whole())}),
         2 * n * f);
  report("layernorm_backward",
         time_ms({kernels::layernorm_backward(test::device().plan().quirks, ls, dy.whole(),
                                              x.whole(), w.whole(), mean.whole(), rstd.whole(),
                                              dx.whole(), dw.whole(), db.whole(), false, false)}),
         3 * n * f);

  const uint32_t n4 = BT * 4 * C, nc = BT * C;
  Buffer h = floats(n4, "h", 11), g = floats(n4, "g", 12), dh = floats(n4, "dh", 13),
         dg = floats(n4, "dg", 14);
  // Storage buffers, then texel views (CPU drivers' variant), one after the other.
  for (bool texels : {false, true}) {
    DeviceQuirks v = q;
    v.texel_fetch_beats_storage_loads = texels;
    const std::string tag = texels ? " (texel views)" : " (storage buffers)";
    report("gelu_forward (BT x 4C)" + tag,
           time_ms({kernels::gelu_forward(v, n4, h.whole(), g.whole())}), 2.0 * n4 * f);
    report("gelu_backward (BT x 4C)" + tag,
           time_ms({kernels::gelu_backward(v, n4, dg.whole(), h.whole(), dh.whole(), false)}),
           3.0 * n4 * f);
    report("residual_forward" + tag,
           time_ms({kernels::residual_forward(v, nc, x.whole(), y.whole(), dx.whole())}),
           3 * n * f);
    report("residual_backward" + tag,
           time_ms(
               {kernels::residual_backward(v, nc, dy.whole(), dx.whole(), y.whole(), false, true)}),
           4 * n * f);  // accumulating y: read dy and y, write dx and y
  }

  kernels::DropoutKey key{42, 1, 2};
  report("dropout_forward p=0.1",
         time_ms({kernels::dropout_forward(nc, 0.1f, key, x.whole(), y.whole())}), 2 * n * f);
  report("dropout_backward p=0.1",
         time_ms({kernels::dropout_backward(nc, 0.1f, key, dy.whole(), dx.whole(), false)}),
         2 * n * f);

  Buffer tokens = test::upload_buffer(test::random_indices(BT, 15, V), "tokens");
  Buffer wte = floats(std::size_t(V) * C, "wte", 16), wpe = floats(std::size_t(ctx) * C, "wpe", 17);
  Buffer dwte = floats(std::size_t(V) * C, "dwte", 18),
         dwpe = floats(std::size_t(ctx) * C, "dwpe", 19);
  kernels::EmbeddingShape es{B, T, C, V, ctx};
  auto ef = kernels::embedding_forward(q, es, tokens.whole(), wte.whole(), wpe.whole(), x.whole());
  report("embedding_forward (" + std::to_string(ef.size()) + " wte pieces)", time_ms(ef),
         3 * n * f);
  auto eb = kernels::embedding_backward(q, es, tokens.whole(), dx.whole(), dwte.whole(),
                                        dwpe.whole(), false, false);
  report("embedding_backward, overwrite (V*C zeroed)", time_ms(eb),
         (n + double(V) * C + double(ctx) * C) * f);
  auto eba = kernels::embedding_backward(q, es, tokens.whole(), dx.whole(), dwte.whole(),
                                         dwpe.whole(), true, true);
  report("embedding_backward, accumulate", time_ms(eba), (n + 2 * n + 2 * n) * f);

  Buffer logits = floats(std::size_t(BT) * V, "logits", 20);
  Buffer targets = test::upload_buffer(test::random_indices(BT, 21, V), "targets");
  Buffer losses = floats(BT, "losses", 22), dlogits = floats(std::size_t(BT) * V, "dlogits", 23);
  Buffer scale = test::upload_buffer(std::vector<float>{1.0f / float(BT)}, "loss scale");
  const double nl = double(BT) * V;
  for (int variant = 0; variant < 3; ++variant) {
    DeviceQuirks v = q;
    v.barriers_are_expensive = variant < 2;
    v.texel_fetch_beats_storage_loads = variant == 1;
    const std::string tag = variant == 0   ? " (row per invocation)"
                            : variant == 1 ? " (row per invocation, texel views)"
                                           : " (row per workgroup)";
    kernels::CrossEntropyShape cs{BT, V};
    report("cross_entropy_forward" + tag,
           time_ms({kernels::cross_entropy_forward(v, cs, logits.whole(), targets.whole(),
                                                   losses.whole())}),
           nl * f);
    report("cross_entropy_backward" + tag,
           time_ms({kernels::cross_entropy_backward(v, cs, logits.whole(), targets.whole(),
                                                    dlogits.whole(), {scale.whole(), 0})}),
           2 * nl * f);
  }
  SUCCEED();
}

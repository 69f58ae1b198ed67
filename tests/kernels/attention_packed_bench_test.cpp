// Attention over packed rows against plain causal rows of the same size, from GPU timestamps: the
// kernels skip the key blocks of other examples, so a row of short examples costs a fraction of
// a whole causal row. Hidden: run with
//   remat_attention_packed_bench_test "[.bench]"
// Rows of T = 512 hold examples of the lengths a log-normal of median 90 tokens gives
// (samples/make_chat_data.py), packed in order; GPT-2's heads (12 of 64) and SmolLM2-135M's (9
// query heads of 64 over 3 key/value heads).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "runtime/kernels/attention.h"
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

// Positions of B rows of T filled in order with examples of these lengths (a row is closed when
// the next one does not fit), the rest padding.
std::vector<uint32_t> packed_positions(uint32_t B, uint32_t T) {
  const uint32_t lengths[] = {88, 61, 140, 95, 73, 52, 110, 90, 67, 205, 84, 99, 58, 77,
                              131, 92, 64, 101, 86, 148, 70, 95, 59, 83, 120, 91, 66, 79};
  std::vector<uint32_t> pos(std::size_t(B) * T, 0);
  std::size_t row = 0, used = 0, i = 0;
  while (row < B) {
    const uint32_t n = lengths[i++ % std::size(lengths)];
    if (used + n > T) {
      for (uint32_t p = 0; used < T; ++used, ++p) pos[row * T + used] = p;
      ++row, used = 0;
      continue;
    }
    for (uint32_t p = 0; p < n; ++p) pos[row * T + used++] = p;
  }
  return pos;
}

void compare(const char* name, kernels::AttentionShape s) {
  const DeviceQuirks& q = test::device().plan().quirks;
  const uint32_t D = s.C / s.NH, kv = s.KV == 0 ? s.NH : s.KV;
  const std::size_t nq = std::size_t(s.B) * s.T * s.C, nkv = std::size_t(s.B) * s.T * kv * D;
  const std::size_t nl = std::size_t(s.B) * s.NH * s.T;
  Buffer qb = test::upload_buffer(test::random_floats(nq, 1), "q");
  Buffer kb = test::upload_buffer(test::random_floats(nkv, 2), "k");
  Buffer vb = test::upload_buffer(test::random_floats(nkv, 3), "v");
  Buffer db = test::upload_buffer(test::random_floats(nq, 4), "dout");
  Buffer out = test::garbage_buffer<float>(nq, "out"), lse = test::garbage_buffer<float>(nl, "lse");
  Buffer dq = test::garbage_buffer<float>(nq, "dq"), dk = test::garbage_buffer<float>(nkv, "dk"),
         dv = test::garbage_buffer<float>(nkv, "dv");
  const std::vector<uint32_t> pos = packed_positions(s.B, s.T);
  Buffer pb = test::upload_buffer(pos, "positions");
  double ms[2][2];
  for (int packed = 0; packed < 2; ++packed) {
    const BufferSlice p = packed ? pb.whole() : BufferSlice{};
    ms[packed][0] = time_ms({kernels::gqa_attention_forward(
        q, s, qb.whole(), kb.whole(), vb.whole(), out.whole(), lse.whole(), DType::f32, p)});
    ms[packed][1] = time_ms({kernels::gqa_attention_backward(
        q, s, db.whole(), qb.whole(), kb.whole(), vb.whole(), out.whole(), lse.whole(), dq.whole(),
        dk.whole(), dv.whole(), kernels::GradWrite::overwrite, DType::f32, p)});
  }
  std::printf("%-32s forward %8.2f -> %8.2f ms (%.2fx)  backward %8.2f -> %8.2f ms (%.2fx)\n",
              name, ms[0][0], ms[1][0], ms[0][0] / ms[1][0], ms[0][1], ms[1][1],
              ms[0][1] / ms[1][1]);
}

}  // namespace

TEST_CASE("packed attention against whole causal rows at T = 512", "[.bench]") {
  std::printf("device: %s\n", test::device().info().name.c_str());
  compare("GPT-2 heads (12 x 64), B 4", {4, 512, 768, 12, 0});
  compare("SmolLM2-135M heads (9/3 x 64), B 4", {4, 512, 576, 9, 3});
}

// Hidden timing ([.bench]) of the block-weight matmuls (runtime/kernels/matmul_blocks.h) against
// the f32 kernels on the decoded weight, at Qwen2-0.5B's shapes: M = 1024 tokens, K = 896 (the
// hidden size; 1024 for the K-quants, whose K is a multiple of 256), N = 896 (q/o projections)
// and 4864 (the MLP's up and gate). On a machine shared with other work absolute times swing by
// tens of percent, so the kernels run alternately in one process, each repetition giving a ratio
// to the f32 kernel run just before it, and the medians are printed. The input gradient also runs
// with one group of four n per loop iteration (the `groups` spec constant, as on GPUs) beside the
// device's choice, so a change of that choice can be judged on the same machine at the same time.
//   remat_matmul_blocks_bench_test "[.bench]"
//   REMAT_BENCH_TYPE=q4_K (one type), REMAT_BENCH_N=896 (one N), REMAT_BENCH_REPS=7 (default 5)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "formats/gguf_blocks.h"
#include "formats/gguf_types.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/matmul_backward.h"
#include "runtime/kernels/matmul_blocks.h"
#include "tests/formats/gguf_block_samples.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;
using kernels::GradWrite;
using kernels::WeightLayout;

namespace {

const GgmlType kTypes[] = {GgmlType::q8_0, GgmlType::q4_0, GgmlType::q4_1, GgmlType::q5_0,
                           GgmlType::q5_1, GgmlType::q2_k, GgmlType::q3_k, GgmlType::q4_k,
                           GgmlType::q5_k, GgmlType::q6_k};

// Random blocks of t with f16 scales of magnitude 2^-6..2^1 (finite, normal values).
std::vector<std::byte> moderate_blocks(GgmlType t, size_t blocks, std::mt19937& rng) {
  const GgmlTypeInfo& info = ggml_type_info(t);
  std::vector<std::byte> bytes = test::random_blocks(t, blocks, rng);
  for (size_t b = 0; b < blocks; ++b)
    for (uint32_t offset : test::f16_field_offsets(t)) {
      const uint16_t h = uint16_t((rng() & 0x83FFu) | (9 + rng() % 8) << 10);
      bytes[b * info.block_bytes + offset] = std::byte(h & 0xFF);
      bytes[b * info.block_bytes + offset + 1] = std::byte(h >> 8);
    }
  return bytes;
}

// W's bytes padded to whole 16-byte texels, as a session binds them.
Buffer upload_blocks(const std::vector<std::byte>& bytes) {
  std::vector<uint8_t> words((bytes.size() + 15) / 16 * 16, 0xA5);
  for (size_t i = 0; i < bytes.size(); ++i) words[i] = uint8_t(bytes[i]);
  return test::upload_buffer(words, "w blocks");
}

// One timed run: ms summed over the dispatches.
double run_ms(Executor& ex) {
  ex.run();
  double sum = 0;
  for (double ms : ex.dispatch_ms()) sum += ms;
  return sum;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The dispatches with the input gradient's `groups` spec constant (index 8) set to g.
std::vector<Dispatch> with_groups(std::vector<Dispatch> ds, uint32_t g) {
  for (Dispatch& d : ds) {
    REQUIRE(d.spec.size() == 9);
    d.spec[8] = g;
  }
  return ds;
}

}  // namespace

TEST_CASE("matmul_blocks: time against the f32 kernels at Qwen2-0.5B's shapes", "[.bench]") {
  const char* only_type = std::getenv("REMAT_BENCH_TYPE");
  const char* only_n = std::getenv("REMAT_BENCH_N");
  const char* reps_env = std::getenv("REMAT_BENCH_REPS");
  const int reps = reps_env ? std::max(1, std::atoi(reps_env)) : 5;
  std::printf("device: %s; medians of %d alternating runs (ms) and of their ratios to f32\n",
              test::device().info().name.c_str(), reps);
  std::printf("%-5s %5s %5s %8s %8s %6s %8s %8s %6s %10s\n", "type", "K", "N", "fwd f32", "fwd blk",
              "ratio", "dX f32", "dX blk", "ratio", "1 group");
  const DeviceQuirks q = test::device().plan().quirks;
  std::mt19937 rng(59);
  const uint32_t M = 1024;
  for (uint32_t N : {896u, 4864u})
    for (GgmlType t : kTypes) {
      const std::string name(ggml_type_info(t).name);
      if ((only_type && name != only_type) || (only_n && N != uint32_t(std::atoi(only_n))))
        continue;
      const uint32_t K = ggml_type_info(t).block_values == 32 ? 896 : 1024;
      const kernels::MatmulShape s{M, N, K, WeightLayout::out_in};
      const auto blocks = moderate_blocks(t, size_t(N) * K / ggml_type_info(t).block_values, rng);
      std::vector<float> w(size_t(N) * K);
      decode_blocks(t, blocks, w);
      Buffer wq = upload_blocks(blocks), wf = test::upload_buffer(w, "w f32");
      Buffer xb = test::upload_buffer(test::random_floats(size_t(M) * K, 1), "x");
      Buffer dyb = test::upload_buffer(test::random_floats(size_t(M) * N, 2), "dy");
      Buffer out = test::garbage_buffer<float>(size_t(M) * N, "out");
      Buffer dx = test::garbage_buffer<float>(size_t(M) * K, "dx");
      const uint32_t id = static_cast<uint32_t>(t);
      const auto dx_blocks = kernels::matmul_blocks_backward_input_pieces(
          q, s, id, dyb.whole(), wq.whole(), dx.whole(), GradWrite::overwrite);
      const ExecutorOptions timed{.timestamps = true};
      // 0 fwd f32, 1 fwd blocks, 2 dX f32, 3 dX blocks, 4 dX blocks with one group.
      std::vector<std::unique_ptr<Executor>> ex;
      auto add = [&](std::vector<Dispatch> ds) {
        ex.push_back(std::make_unique<Executor>(test::kernels(), std::move(ds), timed));
      };
      add(kernels::matmul_forward_pieces(q, s, xb.whole(), wf.whole(), {}, out.whole()));
      add(kernels::matmul_blocks_forward_pieces(q, s, id, xb.whole(), wq.whole(), {}, out.whole()));
      add(kernels::matmul_backward_input_pieces(q, s, dyb.whole(), wf.whole(), dx.whole(),
                                                GradWrite::overwrite));
      add(dx_blocks);
      add(with_groups(dx_blocks, 1));
      for (auto& e : ex) e->run();  // compile and warm up
      std::vector<std::vector<double>> ms(ex.size());
      std::vector<double> fwd_ratio, dx_ratio, one_ratio;
      for (int r = 0; r < reps; ++r) {
        for (size_t i = 0; i < ex.size(); ++i) ms[i].push_back(run_ms(*ex[i]));
        fwd_ratio.push_back(ms[1].back() / ms[0].back());
        dx_ratio.push_back(ms[3].back() / ms[2].back());
        one_ratio.push_back(ms[4].back() / ms[2].back());
      }
      std::printf("%-5s %5u %5u %8.1f %8.1f %6.2f %8.1f %8.1f %6.2f %10.2f\n", name.c_str(), K, N,
                  median(ms[0]), median(ms[1]), median(fwd_ratio), median(ms[2]), median(ms[3]),
                  median(dx_ratio), median(one_ratio));
    }
}

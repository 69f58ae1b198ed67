// matmul_forward against the plain reference at awkward sizes, both weight layouts, with and
// without bias; and bit-identical across runs.
#include <catch2/catch.hpp>

#include "runtime/kernels/matmul.h"
#include "tests/reference/matmul.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

struct Result {
  std::vector<float> gpu, ref;
};

// Both tile variants run on every device, whichever one the device would pick.
DeviceQuirks variant(bool cpu_tiles) {
  DeviceQuirks q = test::device().plan().quirks;
  q.barriers_are_expensive = cpu_tiles;
  q.texel_fetch_beats_storage_loads = false;  // matmul_texels_test.cpp covers those
  return q;
}

Result run_matmul(uint32_t M, uint32_t N, uint32_t K, kernels::WeightLayout layout, bool bias,
                  bool cpu_tiles = true) {
  auto inp = test::random_floats(size_t(M) * K, 1 + M);
  auto w = test::random_floats(size_t(K) * N, 2 + N);
  std::vector<float> b = bias ? test::random_floats(N, 3 + K) : std::vector<float>{};
  Buffer d_inp = test::upload_buffer(inp, "inp");
  Buffer d_w = test::upload_buffer(w, "w");
  Buffer d_b = test::upload_buffer(bias ? b : std::vector<float>{0.f}, "bias");
  Buffer d_out = test::garbage_buffer<float>(size_t(M) * N, "out");
  kernels::MatmulShape s{M, N, K, layout};
  test::run_once({kernels::matmul_forward(variant(cpu_tiles), s, d_inp.whole(), d_w.whole(),
                                          bias ? d_b.whole() : BufferSlice{}, d_out.whole())});
  Result r;
  r.gpu = test::read<float>(d_out, size_t(M) * N);
  ref::matmul_forward(r.ref, inp, w, b, M, N, K,
                      layout == kernels::WeightLayout::in_out ? ref::WeightLayout::in_out
                                                              : ref::WeightLayout::out_in);
  return r;
}

// Relative to the magnitude of the sum of |terms|, which bounds fp32 accumulation error.
void check_close(const Result& r, uint32_t K) {
  const float tol = 1e-6f * float(K) + 1e-6f;
  for (std::size_t i = 0; i < r.gpu.size(); ++i) {
    INFO("element " << i);
    REQUIRE(std::abs(r.gpu[i] - r.ref[i]) <= tol * (1.0f + std::abs(r.ref[i])));
  }
}

}  // namespace

TEST_CASE("matmul_forward matches the reference at sizes that are not tile multiples") {
  for (uint32_t n : {1u, 7u, 33u, 64u, 129u, 257u}) {
    for (auto layout : {kernels::WeightLayout::in_out, kernels::WeightLayout::out_in}) {
      for (bool cpu_tiles : {true, false}) {
        DYNAMIC_SECTION("M=N=K=" << n << " layout " << int(layout) << " cpu tiles " << cpu_tiles) {
          check_close(run_matmul(n, n, n, layout, true, cpu_tiles), n);
        }
      }
    }
  }
}

TEST_CASE("matmul_forward at GPT-shaped rectangles, without bias") {
  check_close(run_matmul(69, 144, 48, kernels::WeightLayout::in_out, true),
              48);  // c_attn, T=23 B=3
  check_close(run_matmul(69, 101, 48, kernels::WeightLayout::out_in, false), 48);  // tied head
  check_close(run_matmul(5, 3, 300, kernels::WeightLayout::in_out, false), 300);
  check_close(run_matmul(69, 101, 48, kernels::WeightLayout::out_in, false, false), 48);
  check_close(run_matmul(5, 3, 300, kernels::WeightLayout::in_out, true, false), 300);
}

TEST_CASE("matmul_forward is bit-identical across runs") {
  auto a = run_matmul(129, 77, 200, kernels::WeightLayout::in_out, true);
  auto b = run_matmul(129, 77, 200, kernels::WeightLayout::in_out, true);
  REQUIRE(a.gpu == b.gpu);
}

// Hidden by default (a benchmark, not a test): `remat_matmul_forward_test "[.bench]"`.
TEST_CASE("matmul_forward throughput", "[.bench]") {
  for (uint32_t n : {256u, 1024u}) {
    auto a = test::random_floats(size_t(n) * n, 1);
    Buffer d_a = test::upload_buffer(a, "a");
    Buffer d_w = test::upload_buffer(a, "w");
    Buffer d_o = test::garbage_buffer<float>(size_t(n) * n, "o");
    kernels::MatmulShape s{n, n, n, kernels::WeightLayout::in_out};
    Executor ex(test::kernels(),
                {kernels::matmul_forward(test::device().plan().quirks, s, d_a.whole(), d_w.whole(),
                                         BufferSlice{}, d_o.whole())},
                ExecutorOptions{true});
    ex.run();  // warm-up: pipeline compilation and first-touch
    double best = 1e30;
    for (int i = 0; i < 3; ++i) {
      ex.run();
      best = std::min(best, ex.dispatch_ms()[0]);
    }
    const double gflops = 2.0 * n * n * n / (best * 1e-3) / 1e9;
    std::printf("matmul_forward %u^3: %.2f ms, %.2f GFLOP/s on %s\n", n, best, gflops,
                test::device().info().name.c_str());
    CHECK(best > 0.0);
  }
}

TEST_CASE("matmul_forward picks the vec4 variant only where it applies, and the tests cover both") {
  Buffer b = test::garbage_buffer<float>(16, "b");
  auto pick = [&](bool cpu, uint32_t N, kernels::WeightLayout l) {
    return kernels::matmul_forward(variant(cpu), {4, N, 4, l}, b.whole(), b.whole(), {}, b.whole())
        .kernel;
  };
  CHECK(pick(true, 64, kernels::WeightLayout::in_out) == KernelId::matmul_forward_vec4);
  CHECK(pick(true, 33, kernels::WeightLayout::in_out) == KernelId::matmul_forward);
  CHECK(pick(true, 64, kernels::WeightLayout::out_in) == KernelId::matmul_forward);
  CHECK(pick(false, 64, kernels::WeightLayout::in_out) == KernelId::matmul_forward);
}

// The roofline kernels compute what they claim, so the peaks `remat bench --kernels` reports are
// rates of real work: the FMA chain reaches a value known in closed form (exact in fp32) and
// agrees with a CPU chain of fused multiply-adds; the copy copies every element.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/kernels/roofline.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// out[i] on the CPU: the same 8 chains, the same order of the final sum.
float cpu_fma_chain(uint32_t i, uint32_t iterations, float a, float b) {
  float x[8];
  for (int k = 0; k < 8; ++k) x[k] = float(i) + float(k);
  for (uint64_t s = 0; s < uint64_t(iterations) * 16; ++s)
    for (float& v : x) v = std::fma(v, a, b);
  const float sx = x[0] + x[4], sy = x[1] + x[5], sz = x[2] + x[6], sw = x[3] + x[7];
  return (sx + sy) + (sz + sw);
}

std::vector<float> run_fma(uint32_t count, uint32_t iterations, float a, float b) {
  Buffer out = test::garbage_buffer<float>(count, "peak_fma out");
  test::run_once({kernels::peak_fma(count, iterations, a, b, out.whole())});
  return test::read<float>(out, count);
}

}  // namespace

TEST_CASE("peak_fma with a = 1, b = 1 adds one per step: out[i] = 8i + 28 + 8·16·iterations") {
  const uint32_t count = 1000, iterations = 37;  // not a multiple of the group size
  const auto out = run_fma(count, iterations, 1.0f, 1.0f);
  for (uint32_t i = 0; i < count; ++i) {
    INFO("invocation " << i);
    REQUIRE(out[i] == float(8 * i + 28 + 8 * 16 * iterations));
  }
}

TEST_CASE("peak_fma matches a CPU chain of fused multiply-adds") {
  const uint32_t count = 513, iterations = 5;
  const float a = 0.75f, b = 0.5f;  // a contraction: the chain converges to b / (1 - a) = 2
  const auto out = run_fma(count, iterations, a, b);
  std::vector<double> ref(count);
  for (uint32_t i = 0; i < count; ++i) ref[i] = cpu_fma_chain(i, iterations, a, b);
  // A driver may split an fma into a multiply and an add: allow a few ulps per step.
  test::require_close(out, ref, 1e-5, 1e-5, "peak_fma");
}

TEST_CASE("peak_fma reports two FLOPs per FMA") {
  REQUIRE(kernels::peak_fma_flops(10, 3) == 2.0 * 10 * 3 * 128);
}

TEST_CASE("peak_copy copies every element") {
  for (uint32_t count : {1u, 1000u, 100003u}) {
    DYNAMIC_SECTION("count " << count << " vec4s") {
      std::vector<float> src(std::size_t(count) * 4);
      for (std::size_t i = 0; i < src.size(); ++i) src[i] = float(i % 1000003) * 0.5f - 7.0f;
      Buffer bs = test::upload_buffer(src, "copy src");
      Buffer bd = test::garbage_buffer<float>(src.size(), "copy dst");
      test::run_once({kernels::peak_copy(count, bs.whole(), bd.whole())});
      REQUIRE(test::bit_identical(test::read<float>(bd, src.size()), src));
      REQUIRE(kernels::peak_copy_bytes(count) == 32.0 * count);
    }
  }
}

TEST_CASE("roofline builders reject empty and too-small dispatches") {
  Buffer small(test::device(), 64, MemoryCategory::scratch, "small");
  REQUIRE_THROWS_AS(kernels::peak_fma(0, 1, 1, 1, small.whole()), std::invalid_argument);
  REQUIRE_THROWS_AS(kernels::peak_fma(17, 1, 1, 1, small.whole()), std::invalid_argument);
  REQUIRE_THROWS_AS(kernels::peak_copy(5, small.whole(), small.whole()), std::invalid_argument);
}

// Floats through a tensor's storage dtype: narrowing rounds as base/half_float does, widening is
// exact, and staging pieces of 16-bit tensors carry the right elements both ways.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <numeric>

#include "base/half_float.h"
#include "runtime/float_storage.h"
#include "tests/support/test_device.h"

using namespace remat;

TEST_CASE("float storage: narrow and widen round trip through each dtype") {
  const std::vector<float> v = {1.0f, -2.5f, 1.0f / 3.0f, 65504.0f, 1e-8f, 3.0e38f};
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    DYNAMIC_SECTION(dtype_name(t)) {
      std::vector<std::byte> bytes(v.size() * std::size_t(dtype_bytes(t)));
      narrow_floats(v, t, bytes);
      std::vector<float> back(v.size());
      widen_floats(bytes, t, back);
      for (std::size_t i = 0; i < v.size(); ++i) {
        uint16_t h = 0;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        const float want = t == DType::f32   ? v[i]
                           : t == DType::f16 ? f16_to_float(float_to_f16(v[i]))
                                             : bf16_to_float(float_to_bf16(v[i]));
        REQUIRE(std::memcmp(&back[i], &want, 4) == 0);
      }
      // A value already in the dtype comes back exactly.
      std::vector<std::byte> again(bytes.size());
      narrow_floats(back, t, again);
      REQUIRE(again == bytes);
    }
  }
  std::vector<std::byte> wrong(3);
  REQUIRE_THROWS_AS(narrow_floats(v, DType::bf16, wrong), std::logic_error);
}

TEST_CASE("float storage: staged 16-bit tensors hold every element, in order, across pieces") {
  // 3000 elements through a 1 KiB staging buffer: several pieces of 512 bf16 values.
  const std::size_t n = 3000;
  for (DType t : {DType::f16, DType::bf16}) {
    DYNAMIC_SECTION(dtype_name(t)) {
      Buffer dst(test::device(), n * 2, MemoryCategory::persistent, "w16");
      Staging staging(test::device(), 1024);
      staging.upload(dst.whole(), fill_floats(t, [](uint64_t first, std::span<float> out) {
                       for (std::size_t i = 0; i < out.size(); ++i)
                         out[i] = float(first + i) * 0.25f;
                     }));
      std::vector<float> got(n, NAN);
      staging.download(dst.whole(), drain_floats(t, [&](uint64_t first, std::span<const float> x) {
                         std::copy(x.begin(), x.end(), got.begin() + std::ptrdiff_t(first));
                       }));
      for (std::size_t i = 0; i < n; ++i) {
        const float v = float(i) * 0.25f;
        const float want =
            t == DType::f16 ? f16_to_float(float_to_f16(v)) : bf16_to_float(float_to_bf16(v));
        REQUIRE(got[i] == want);
      }
    }
  }
}

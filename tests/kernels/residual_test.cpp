// Residual add and its gradient routing: the reference against finite differences, the GPU
// kernels bit-exact against the fp32 reference (one IEEE addition per element), every
// combination of accumulate flags, and bit-identity.
#include <catch2/catch.hpp>

#include "runtime/kernels/residual.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/residual.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

TEST_CASE("residual reference backward matches finite differences") {
  auto a = test::random_doubles(20, 41), b = test::random_doubles(20, 42);
  auto weights = test::random_doubles(20, 43);
  std::vector<double> y;
  auto loss = [&] {
    ref::residual_forward(y, a, b);
    return test::weighted_sum(y, weights);
  };
  std::vector<double> da(20), db(20);
  ref::residual_backward(da, db, weights, false, false);
  test::require_matches_finite_differences(loss, a, da, "da");
  test::require_matches_finite_differences(loss, b, db, "db");
}

TEST_CASE("scaled residual (a LoRA merge) reference backward matches finite differences") {
  auto a = test::random_doubles(20, 52), b = test::random_doubles(20, 53);
  auto weights = test::random_doubles(20, 54);
  std::vector<double> y;
  auto loss = [&] {
    ref::residual_forward(y, a, b, 0.375);
    return test::weighted_sum(y, weights);
  };
  std::vector<double> da(20), db(20);
  ref::residual_backward(da, db, weights, false, false, 0.375);
  test::require_matches_finite_differences(loss, a, da, "da");
  test::require_matches_finite_differences(loss, b, db, "db");
}

struct ResRun {
  std::vector<float> y, da, db;
};

// da0/db0 empty: that gradient is overwritten (and starts as garbage), else accumulated.
ResRun run_gpu(const std::vector<float>& a, const std::vector<float>& b,
               const std::vector<float>& dy, const std::vector<float>& da0,
               const std::vector<float>& db0, float scale = 1.0f,
               const DeviceQuirks& q = test::device().plan().quirks) {
  const auto n = uint32_t(a.size());
  Buffer ba = test::upload_buffer(a, "a"), bb = test::upload_buffer(b, "b"),
         bdy = test::upload_buffer(dy, "dy");
  Buffer by = test::garbage_buffer<float>(n, "y");
  Buffer bda = da0.empty() ? test::garbage_buffer<float>(n, "da") : test::upload_buffer(da0, "da");
  Buffer bdb = db0.empty() ? test::garbage_buffer<float>(n, "db") : test::upload_buffer(db0, "db");
  test::run_once({kernels::residual_forward(q, n, ba.whole(), bb.whole(), by.whole(), scale),
                  kernels::residual_backward(q, n, bdy.whole(), bda.whole(), bdb.whole(),
                                             !da0.empty(), !db0.empty(), scale)});
  return {test::read<float>(by, n), test::read<float>(bda, n), test::read<float>(bdb, n)};
}

// Storage buffers, or texel views four floats at a time (CPU drivers).
DeviceQuirks with_texels(bool on) {
  DeviceQuirks q = test::device().plan().quirks;
  q.texel_fetch_beats_storage_loads = on;
  return q;
}

TEST_CASE("residual GPU forward and backward equal the fp32 reference bit for bit") {
  for (bool texels : {false, true})
    for (std::size_t n : {std::size_t(3 * 23 * 48), std::size_t(1), std::size_t(4 * 64 * 768)}) {
      auto a = test::random_floats(n, 44), b = test::random_floats(n, 45),
           dy = test::random_floats(n, 46);
      for (int flags = 0; flags < 8; ++flags) {
        const bool acc_a = flags & 1, acc_b = flags & 2;
        const float scale = flags & 4 ? 2.7f : 1.0f;  // a LoRA merge's alpha / r
        DYNAMIC_SECTION((texels ? "texel views" : "storage buffers")
                        << ": n = " << n << " accumulate a " << acc_a << " b " << acc_b << " scale "
                        << scale) {
          std::vector<float> da0 = acc_a ? test::random_floats(n, 47) : std::vector<float>{};
          std::vector<float> db0 = acc_b ? test::random_floats(n, 48) : std::vector<float>{};
          auto g = run_gpu(a, b, dy, da0, db0, scale, with_texels(texels));
          std::vector<float> y, da = da0, db = db0;
          da.resize(n), db.resize(n);
          ref::residual_forward(y, a, b, scale);
          ref::residual_backward(da, db, dy, acc_a, acc_b, scale);
          REQUIRE(test::bit_identical(g.y, y));
          REQUIRE(test::bit_identical(g.da, da));
          REQUIRE(test::bit_identical(g.db, db));
        }
      }
    }
}

TEST_CASE("residual GPU runs are bit-identical") {
  auto a = test::random_floats(999, 49), b = test::random_floats(999, 50),
       dy = test::random_floats(999, 51);
  auto r1 = run_gpu(a, b, dy, {}, {}), r2 = run_gpu(a, b, dy, {}, {});
  REQUIRE(test::bit_identical(r1.y, r2.y));
  REQUIRE(test::bit_identical(r1.da, r2.da));
  REQUIRE(test::bit_identical(r1.db, r2.db));
}

}  // namespace

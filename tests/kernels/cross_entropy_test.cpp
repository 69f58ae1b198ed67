// Fused softmax + cross-entropy: the reference backward against finite differences of the mean
// loss; both GPU variants (serial row per invocation, workgroup per row) against the reference
// at awkward shapes and GPT-2's vocabulary, with extreme logits; out-of-range targets; and
// bit-identity across runs.
#include <catch2/catch.hpp>

#include <cmath>

#include "runtime/kernels/cross_entropy.h"
#include "tests/kernels/kernel_checks.h"
#include "tests/reference/cross_entropy.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

TEST_CASE("cross_entropy reference backward matches finite differences") {
  const std::size_t rows = 4, V = 7;
  auto logits = test::random_doubles(rows * V, 71, -3, 3);
  std::vector<uint32_t> targets = {0, 6, 3, 3};
  const double scale = 1.0 / rows;
  std::vector<double> losses;
  auto loss = [&] {
    ref::cross_entropy_forward(losses, logits, targets, rows, V);
    double s = 0;
    for (double l : losses) s += l;
    return scale * s;
  };
  std::vector<double> dlogits;
  ref::cross_entropy_backward(dlogits, logits, targets, rows, V, scale);
  test::require_matches_finite_differences(loss, logits, dlogits, "dlogits");
}

struct CeRun {
  std::vector<float> losses, dlogits;
};

CeRun run_gpu(const DeviceQuirks& q, std::size_t rows, std::size_t V,
              const std::vector<float>& logits, const std::vector<uint32_t>& targets) {
  Buffer bl = test::upload_buffer(logits, "logits"), bt = test::upload_buffer(targets, "targets");
  Buffer bloss = test::garbage_buffer<float>(rows, "losses");
  Buffer bd = test::garbage_buffer<float>(rows * V, "dlogits");
  kernels::CrossEntropyShape s{uint32_t(rows), uint32_t(V)};
  test::run_once({kernels::cross_entropy_forward(q, s, bl.whole(), bt.whole(), bloss.whole()),
                  kernels::cross_entropy_backward(q, s, bl.whole(), bt.whole(), bd.whole())});
  return {test::read<float>(bloss, rows), test::read<float>(bd, rows * V)};
}

// Logits like a trained head's (spread of a few units), plus rows that test stability: one
// shifted by +1000 (exp overflows without the max), one confident (target far above the rest).
std::vector<float> make_logits(std::size_t rows, std::size_t V, const std::vector<uint32_t>& t) {
  auto l = test::random_floats(rows * V, 72 + V, -4, 4);
  if (rows >= 3) {
    for (std::size_t v = 0; v < V; ++v) l[1 * V + v] += 1000.0f;
    l[2 * V + t[2]] = 30.0f;
  }
  return l;
}

DeviceQuirks variant(bool serial) {
  DeviceQuirks q = test::device().plan().quirks;
  q.barriers_are_expensive = serial;
  return q;
}

TEST_CASE("cross_entropy GPU forward and backward match the reference in both variants") {
  struct Shape {
    std::size_t rows, V;
  };
  for (bool serial : {true, false}) {
    for (Shape sh :
         {Shape{3 * 23, 101}, Shape{1, 1}, Shape{5, 2}, Shape{4, 50257}, Shape{64, 1024}}) {
      DYNAMIC_SECTION((serial ? "row per invocation" : "row per workgroup")
                      << ": rows " << sh.rows << " V " << sh.V) {
        auto targets = test::random_indices(sh.rows, 73, uint32_t(sh.V));
        auto logits = make_logits(sh.rows, sh.V, targets);
        auto g = run_gpu(variant(serial), sh.rows, sh.V, logits, targets);
        std::vector<double> losses, dlogits;
        const auto dl = test::to_double(logits);
        ref::cross_entropy_forward(losses, dl, targets, sh.rows, sh.V);
        ref::cross_entropy_backward(dlogits, dl, targets, sh.rows, sh.V, 1.0 / double(sh.rows));
        // Reductions over V (up to 50257 terms) in fp32: 1e-4 relative. The loss's absolute
        // floor 1e-5 covers losses near 0 (confident rows), where log(sum) ~ 0 loses relative
        // meaning; dlogits' floor is 1e-6 of its scale 1/rows (softmax - 1 cancels at the target).
        test::require_close(g.losses, losses, 1e-4, 1e-5, "losses");
        test::require_close(g.dlogits, dlogits, 1e-4, 1e-6 / double(sh.rows), "dlogits");
      }
    }
  }
}

TEST_CASE("cross_entropy gives NaN for targets outside the vocabulary") {
  for (bool serial : {true, false}) {
    const std::size_t rows = 6, V = 101;
    auto targets = test::random_indices(rows, 74, V);
    targets[4] = V;
    auto g = run_gpu(variant(serial), rows, V, make_logits(rows, V, targets), targets);
    for (std::size_t r = 0; r < rows; ++r) {
      INFO((serial ? "serial" : "workgroup") << " row " << r);
      REQUIRE(std::isnan(g.losses[r]) == (r == 4));
      REQUIRE(std::isnan(g.dlogits[r * V]) == (r == 4));
    }
  }
}

TEST_CASE("cross_entropy GPU runs are bit-identical") {
  for (bool serial : {true, false}) {
    const std::size_t rows = 3 * 23, V = 1000;
    auto targets = test::random_indices(rows, 75, V);
    auto logits = make_logits(rows, V, targets);
    auto a = run_gpu(variant(serial), rows, V, logits, targets);
    auto b = run_gpu(variant(serial), rows, V, logits, targets);
    REQUIRE(test::bit_identical(a.losses, b.losses));
    REQUIRE(test::bit_identical(a.dlogits, b.dlogits));
  }
}

}  // namespace

// Fused softmax + cross-entropy: the reference backward against finite differences of the mean
// loss, with and without ignored targets; both GPU variants (serial row per invocation,
// workgroup per row) against the reference at awkward shapes and GPT-2's vocabulary, with extreme
// logits, with ignored rows mixed in and with every row ignored; out-of-range targets; and
// bit-identity across runs.
#include <catch2/catch.hpp>

#include <optional>

#include <cmath>
#include <limits>

#include "base/ignore_target.h"
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
  // Ignored rows: the mean runs over the two trained rows, and nothing depends on the ignored
  // rows' logits, so their finite differences (and dlogits) are 0.
  for (auto targets : {std::vector<uint32_t>{0, 6, 3, 3},
                       std::vector<uint32_t>{kIgnoreTarget, 6, kIgnoreTarget, 3}}) {
    std::size_t trained = 0;
    for (uint32_t t : targets) trained += t != kIgnoreTarget;
    const double scale = 1.0 / double(trained);
    std::vector<double> losses;
    auto loss = [&] {
      ref::cross_entropy_forward(losses, logits, targets, rows, V);
      double s = 0;
      for (double l : losses) s += l;
      return scale * s;
    };
    std::vector<double> dlogits;
    ref::cross_entropy_backward(dlogits, logits, targets, rows, V, scale);
    INFO(trained << " trained rows");
    test::require_matches_finite_differences(loss, logits, dlogits, "dlogits");
  }
}

struct CeRun {
  std::vector<float> losses, dlogits;
};

// The backward reads its scale from a buffer at run time; word 2 of it, so that the word index
// is used (the words around it are NaN).
CeRun run_gpu(const DeviceQuirks& q, std::size_t rows, std::size_t V,
              const std::vector<float>& logits, const std::vector<uint32_t>& targets, float scale,
              const std::vector<float>& row_scales = {}) {
  Buffer bl = test::upload_buffer(logits, "logits"), bt = test::upload_buffer(targets, "targets");
  Buffer bloss = test::garbage_buffer<float>(rows, "losses");
  Buffer bd = test::garbage_buffer<float>(rows * V, "dlogits");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Per-row scales (when given) start at word 2 too, row r at 2 + r.
  std::vector<float> words{nan, nan, scale, nan};
  if (!row_scales.empty()) {
    words.resize(2);
    words.insert(words.end(), row_scales.begin(), row_scales.end());
    words.push_back(nan);
  }
  Buffer bs = test::upload_buffer(words, "loss scale");
  kernels::CrossEntropyShape s{uint32_t(rows), uint32_t(V)};
  test::run_once({kernels::cross_entropy_forward(q, s, bl.whole(), bt.whole(), bloss.whole()),
                  kernels::cross_entropy_backward(q, s, bl.whole(), bt.whole(), bd.whole(),
                                                  {bs.whole(), 2, !row_scales.empty()})});
  return {test::read<float>(bloss, rows), test::read<float>(bd, rows * V)};
}

// 1 / (rows whose target is trained), the scale of the mean over trained rows.
float mean_scale(const std::vector<uint32_t>& targets) {
  std::size_t trained = 0;
  for (uint32_t t : targets) trained += t != kIgnoreTarget;
  return 1.0f / float(trained);
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

// The device's own choice of storage buffers or texel views (CPU drivers) unless told.
DeviceQuirks variant(bool serial, std::optional<bool> texels = std::nullopt) {
  DeviceQuirks q = test::device().plan().quirks;
  q.barriers_are_expensive = serial;
  if (texels) q.texel_fetch_beats_storage_loads = *texels;
  return q;
}

// Which targets a case ignores.
enum class Mask { none, mixed, all };

const char* mask_name(Mask m) {
  return m == Mask::none    ? "no target ignored"
         : m == Mask::mixed ? "rows 1, 4, 7... ignored"
                            : "all ignored";
}

TEST_CASE("cross_entropy GPU forward and backward match the reference in both variants") {
  struct Shape {
    std::size_t rows, V;
  };
  for (bool serial : {true, false}) {
    for (Shape sh :
         {Shape{3 * 23, 101}, Shape{1, 1}, Shape{5, 2}, Shape{4, 50257}, Shape{64, 1024}}) {
      for (Mask mask : {Mask::none, Mask::mixed, Mask::all}) {
        DYNAMIC_SECTION((serial ? "row per invocation" : "row per workgroup")
                        << ": rows " << sh.rows << " V " << sh.V << ", " << mask_name(mask)) {
          auto targets = test::random_indices(sh.rows, 73, uint32_t(sh.V));
          auto logits = make_logits(sh.rows, sh.V, targets);
          // Ignored rows (row 1 is the one shifted by +1000) get NaN logits: nothing may read them.
          for (std::size_t r = 0; r < sh.rows; ++r)
            if (mask == Mask::all || (mask == Mask::mixed && r % 3 == 1)) {
              targets[r] = kIgnoreTarget;
              for (std::size_t v = 0; v < sh.V; ++v)
                logits[r * sh.V + v] = std::numeric_limits<float>::quiet_NaN();
            }
          // With every row ignored the host never runs a step; any finite scale shows that the
          // rows are zeros whatever it is.
          const float scale = mask == Mask::all ? 0.5f : mean_scale(targets);
          auto g = run_gpu(variant(serial), sh.rows, sh.V, logits, targets, scale);
          std::vector<double> losses, dlogits;
          const auto dl = test::to_double(logits);
          ref::cross_entropy_forward(losses, dl, targets, sh.rows, sh.V);
          ref::cross_entropy_backward(dlogits, dl, targets, sh.rows, sh.V, double(scale));
          // Reductions over V (up to 50257 terms) in fp32: 1e-4 relative. The loss's absolute
          // floor 1e-5 covers losses near 0 (confident rows), where log(sum) ~ 0 loses relative
          // meaning; dlogits' floor is 1e-6 of its scale (softmax - 1 cancels at the target).
          // Ignored rows must be exactly 0: a reference value of 0 leaves only the floor, so check
          // them bit for bit as well.
          test::require_close(g.losses, losses, 1e-4, 1e-5, "losses");
          test::require_close(g.dlogits, dlogits, 1e-4, 1e-6 * double(scale), "dlogits");
          for (std::size_t r = 0; r < sh.rows; ++r) {
            if (targets[r] != kIgnoreTarget) continue;
            INFO("ignored row " << r);
            REQUIRE(g.losses[r] == 0.0f);
            for (std::size_t v = 0; v < sh.V; ++v) REQUIRE(g.dlogits[r * sh.V + v] == 0.0f);
          }
        }
      }
    }
  }
}

// A preference objective scales each row by its own coefficient (kernels::LossScale::per_row).
// Every row given the one scale gives that scale's bits exactly (SFT through the per-row path);
// distinct scales, negative and zero among them, give each row the reference's gradient at its
// own scale.
TEST_CASE("cross_entropy backward reads one scale per row: equal ones are the one scale's bits") {
  const std::size_t rows = 3 * 23, V = 101;
  for (bool serial : {true, false}) {
    for (bool texels : {false, true}) {
      DYNAMIC_SECTION((serial ? "row per invocation" : "row per workgroup")
                      << (texels ? ", texels" : "")) {
        auto targets = test::random_indices(rows, 74, uint32_t(V));
        targets[4] = kIgnoreTarget;
        const auto logits = make_logits(rows, V, targets);
        const DeviceQuirks q = variant(serial, texels);
        const float scale = mean_scale(targets);
        const CeRun one = run_gpu(q, rows, V, logits, targets, scale);
        const CeRun equal =
            run_gpu(q, rows, V, logits, targets, 0.0f, std::vector<float>(rows, scale));
        REQUIRE(equal.dlogits == one.dlogits);
        std::vector<float> distinct(rows);
        for (std::size_t r = 0; r < rows; ++r)
          distinct[r] = r % 5 == 0 ? 0.0f : 0.07f * (float(r) - 30.0f);
        const CeRun g = run_gpu(q, rows, V, logits, targets, 0.0f, distinct);
        std::vector<double> dlogits, unit;
        ref::cross_entropy_backward(unit, test::to_double(logits), targets, rows, V, 1.0);
        for (std::size_t i = 0; i < rows * V; ++i)
          dlogits.push_back(unit[i] * double(distinct[i / V]));
        test::require_close(g.dlogits, dlogits, 1e-4, 1e-6, "dlogits");
        for (std::size_t v = 0; v < V; ++v) REQUIRE(g.dlogits[5 * V + v] == 0.0f);
      }
    }
  }
}

TEST_CASE("cross_entropy gives NaN for targets outside the vocabulary but kIgnoreTarget") {
  for (bool serial : {true, false}) {
    const std::size_t rows = 6, V = 101;
    auto targets = test::random_indices(rows, 74, V);
    auto logits = make_logits(rows, V, targets);
    targets[4] = V;
    targets[5] = kIgnoreTarget;  // the one value outside the vocabulary that is not an error
    auto g = run_gpu(variant(serial), rows, V, logits, targets, 0.25f);
    for (std::size_t r = 0; r < rows; ++r) {
      INFO((serial ? "serial" : "workgroup") << " row " << r);
      REQUIRE(std::isnan(g.losses[r]) == (r == 4));
      REQUIRE(std::isnan(g.dlogits[r * V]) == (r == 4));
    }
    REQUIRE(g.losses[5] == 0.0f);
    REQUIRE(g.dlogits[5 * V] == 0.0f);
  }
}

TEST_CASE("cross_entropy storage-buffer and texel-view kernels give the same bits") {
  for (bool serial : {true, false}) {
    for (std::size_t V : {std::size_t(101), std::size_t(50257)}) {
      DYNAMIC_SECTION((serial ? "row per invocation" : "row per workgroup") << ", V " << V) {
        const std::size_t rows = 5;
        auto targets = test::random_indices(rows, 76, uint32_t(V));
        auto logits = make_logits(rows, V, targets);
        targets[3] = kIgnoreTarget;
        const float scale = mean_scale(targets);
        auto s = run_gpu(variant(serial, false), rows, V, logits, targets, scale);
        auto t = run_gpu(variant(serial, true), rows, V, logits, targets, scale);
        REQUIRE(test::bit_identical(s.losses, t.losses));
        REQUIRE(test::bit_identical(s.dlogits, t.dlogits));
      }
    }
  }
}

TEST_CASE("cross_entropy GPU runs are bit-identical") {
  for (bool serial : {true, false}) {
    const std::size_t rows = 3 * 23, V = 1000;
    auto targets = test::random_indices(rows, 75, V);
    auto logits = make_logits(rows, V, targets);
    for (std::size_t r = 0; r < rows; r += 5) targets[r] = kIgnoreTarget;
    auto a = run_gpu(variant(serial), rows, V, logits, targets, mean_scale(targets));
    auto b = run_gpu(variant(serial), rows, V, logits, targets, mean_scale(targets));
    REQUIRE(test::bit_identical(a.losses, b.losses));
    REQUIRE(test::bit_identical(a.dlogits, b.dlogits));
  }
}

}  // namespace

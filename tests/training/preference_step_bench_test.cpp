// The DPO step's time over the SFT step's on the same rows, in one process, steps taken in turn
// (a shared machine's load moves between separate runs by more than the figures here). DPO's
// step on B pairs runs 2B rows (the chosen and the rejected answers) in two submissions around
// the host's float64 loss; its reference log-probs are precomputed, so the step runs no reference
// forward. Compared with SFT on the B chosen rows (TRL's SFT on the same data) and on all 2B
// rows, each with LoRA r8 and fully fine-tuned. Hidden: `remat_preference_step_bench_test
// "[.bench]"`; it prints figures and asserts only that every loss is finite.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "runtime/preference_session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

template <typename F>
double ms_of(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("DPO step over the SFT step on the same rows", "[.bench]") {
  constexpr int kPairs = 4, kSeq = 64, kSteps = 6;
  for (int rank : {8, 0}) {
    SessionConfig c;
    c.model = ModelConfig::preset("tiny");
    c.model.vocab = 50257;  // GPT-2's vocabulary: the head and loss weigh as in a real fine-tune
    c.shape.seq = kSeq;
    c.lora.rank = rank;
    c.optimizer.lr = 1e-4;
    c.measure_matmul_tiles = false;  // the device's tiles in every session: the same matmuls
    SessionConfig sft_b = c, sft_2b = c;
    sft_b.shape.batch = kPairs;
    sft_2b.shape.batch = 2 * kPairs;
    Session chosen(test::device(), sft_b), both(test::device(), sft_2b);
    Session dpo(test::device(), preference_session_config(c, kPairs));
    const std::size_t n = std::size_t(2 * kPairs) * kSeq;
    Batch rows{test::random_indices(n, 5, 50257), test::random_indices(n, 6, 50257), {}};
    for (std::size_t i = 0; i < n; i += 3) rows.targets[i] = 0xFFFFFFFFu;  // a prompt's mask
    const std::vector<double> reference = rows_log_probs(dpo, rows);
    const std::span<const uint32_t> t(rows.tokens), g(rows.targets);
    std::vector<double> a, b, d, r;
    for (int s = 0; s <= kSteps; ++s) {  // step 0 warms every session up, untimed
      double loss = 0;
      const double ta = ms_of([&] { loss += chosen.step(t.first(n / 2), g.first(n / 2)); });
      const double tb = ms_of([&] { loss += both.step(t, g); });
      const double td = ms_of([&] { loss += preference_step(dpo, {}, rows, reference).loss; });
      // What a step that did not precompute would add: the reference model's forward on its rows.
      const double tr = ms_of([&] { loss += rows_log_probs(dpo, rows).front(); });
      REQUIRE(std::isfinite(loss));
      if (s == 0) continue;
      a.push_back(ta);
      b.push_back(tb);
      d.push_back(td);
      r.push_back(tr);
    }
    std::printf(
        "%s, %d pairs x T%d (V50257): SFT on the %d chosen rows %.1f ms, SFT on all %d rows %.1f "
        "ms, DPO %.1f ms (reference precomputed): DPO/SFT(chosen) %.2fx, DPO/SFT(all rows) "
        "%.2fx; with a reference forward each step (not precomputed) %.1f ms, %.2fx SFT(chosen)\n",
        rank ? "LoRA r8" : "full", kPairs, kSeq, kPairs, median(a), 2 * kPairs, median(b),
        median(d), median(d) / median(a), median(d) / median(b), median(d) + median(r),
        (median(d) + median(r)) / median(a));
  }
}

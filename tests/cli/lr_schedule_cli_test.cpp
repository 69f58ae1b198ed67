// `remat train --lr-schedule`: the rate each step uses is logged, and it follows transformers'
// warmup-then-decay formulas, written out again here rather than taken from base/lr_schedule.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/json_number.h"
#include "tests/support/run_command.h"
#include "tests/text/temp_folder.h"

using remat::test::json_number;
using remat::test::run_remat;

namespace {

const std::string kTrain =
    "train --layers 1 --dim 32 --heads 2 --ctx 16 --seq 16 --batch 2 --lr 1e-2 --steps 6 "
    "--quiet --data /usr/share/common-licenses/GPL-3 ";

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Cosine with warmup and a floor: 0 → peak over `warmup` updates, then half a cosine period from
// peak down to peak·floor at update `total`; update s (from 0) uses the rate at s.
double cosine_rate(double peak, int s, int warmup, int total, double floor) {
  if (s < warmup) return peak * s / warmup;
  const double pi = std::acos(-1.0);
  const double progress = double(s - warmup) / (total - warmup);
  return peak * (floor + (1 - floor) * (1 + std::cos(pi * progress)) / 2);
}

}  // namespace

TEST_CASE("remat train --lr-schedule cosine logs each step's rate as the formula gives it") {
  remat::test::TempFolder d("lr_schedule_cosine");
  const auto r = run_remat(kTrain + "--lr-schedule cosine --warmup-steps 2 --min-lr-ratio 0.1 " +
                           "--log-json " + d.quoted("log.jsonl"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto log = lines(d.read("log.jsonl"));
  REQUIRE(log.size() == 7);
  for (int s = 0; s < 6; ++s) {
    INFO("step " << s + 1 << ": " << log[s]);
    const double want = cosine_rate(1e-2, s, 2, 6, 0.1);
    CHECK(json_number(log[s], "lr") == Approx(want).epsilon(1e-12).margin(1e-18));
  }
  // Spot values: warmup from 0, the peak after it, the floor never reached within the run.
  CHECK(json_number(log[0], "lr") == 0);
  CHECK(json_number(log[1], "lr") == Approx(5e-3).epsilon(1e-12));
  CHECK(json_number(log[2], "lr") == Approx(1e-2).epsilon(1e-12));
  CHECK(json_number(log[5], "lr") > 1e-3);
}

TEST_CASE("remat train --lr-schedule linear decays to zero after the last step") {
  remat::test::TempFolder d("lr_schedule_linear");
  const auto r = run_remat(kTrain + "--lr-schedule linear --warmup-steps 1 --log-json " +
                           d.quoted("log.jsonl"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto log = lines(d.read("log.jsonl"));
  REQUIRE(log.size() == 7);
  // W = 1, T = 6: 0, then 1e-2 · (6 - s) / 5.
  const double want[] = {0, 1e-2, 8e-3, 6e-3, 4e-3, 2e-3};
  for (int s = 0; s < 6; ++s) {
    INFO("step " << s + 1);
    CHECK(json_number(log[s], "lr") == Approx(want[s]).epsilon(1e-12).margin(1e-18));
  }
}

TEST_CASE("remat train without --lr-schedule trains exactly as --lr-schedule constant") {
  remat::test::TempFolder d("lr_schedule_constant");
  const auto plain = run_remat(kTrain + "--log-json " + d.quoted("plain.jsonl"));
  const auto constant =
      run_remat(kTrain + "--lr-schedule constant --log-json " + d.quoted("constant.jsonl"));
  INFO(plain.err << constant.err);
  REQUIRE(plain.exit_code == 0);
  REQUIRE(constant.exit_code == 0);
  const auto a = lines(d.read("plain.jsonl")), b = lines(d.read("constant.jsonl"));
  REQUIRE(a.size() == 7);
  REQUIRE(b.size() == 7);
  for (int s = 0; s < 6; ++s) {
    INFO("step " << s + 1);
    CHECK(json_number(a[s], "lr") == 1e-2);
    CHECK(json_number(b[s], "lr") == 1e-2);
    CHECK(json_number(a[s], "loss") == json_number(b[s], "loss"));
    CHECK(json_number(a[s], "grad_norm") == json_number(b[s], "grad_norm"));
  }
  CHECK(json_number(a[6], "final_loss") == json_number(b[6], "final_loss"));
}

TEST_CASE("remat train shows the rate in its progress lines") {
  const auto r = run_remat(
      "train --layers 1 --dim 32 --heads 2 --ctx 16 --seq 16 --batch 2 --lr 1e-2 --steps 2 "
      "--warmup-steps 1 --data /usr/share/common-licenses/GPL-3");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("step 1/2  loss ") != std::string::npos);
  CHECK(r.out.find("  lr 0  ") != std::string::npos);
  CHECK(r.out.find("  lr 0.01  ") != std::string::npos);
}

TEST_CASE("remat train refuses a schedule it cannot follow") {
  const std::pair<std::string, std::string> cases[] = {
      {"--lr-schedule step", "--lr-schedule: "},
      {"--warmup-steps 7", "--warmup-steps 7 is more than --steps 6"},
      {"--warmup-steps -1", "--warmup-steps"},
      {"--lr-schedule cosine --min-lr-ratio 1.5", "--min-lr-ratio must be in [0, 1]"},
      {"--lr-schedule cosine --min-lr-ratio -0.1", "--min-lr-ratio must be in [0, 1]"},
      {"--lr-schedule cosine --min-lr-ratio nan", "--min-lr-ratio"},
      {"--lr-schedule linear --min-lr-ratio 0.1", "--min-lr-ratio needs --lr-schedule cosine"},
  };
  for (const auto& [flags, fragment] : cases) {
    const auto r = run_remat(kTrain + flags);
    INFO("remat train ... " << flags << "\nstderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("remat: error: ", 0) == 0);
    CHECK(r.err.find(fragment) != std::string::npos);
    CHECK(r.out.empty());
  }
}

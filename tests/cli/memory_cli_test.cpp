// `--memory SIZE` as a user runs it: one byte below the smallest total, train exits 2 with one
// line naming the minimum (the same bytes plan reports); at the minimum it trains and allocates
// exactly the plan; an --arena cap beside it is checked as well; plan prints and writes the
// session total next to the budget.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <regex>
#include <string>

#include "base/json.h"
#include "tests/support/json_number.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_folder.h"

using remat::test::json_number;
using remat::test::run_remat;

namespace {

const std::string kShape = "tiny --layers 2 --batch 2 --seq 64";
const std::string kTrain =
    "train " + kShape + " --steps 1 --data /usr/share/common-licenses/GPL-3 --quiet";

// The minimum total a too-small budget's one-line error names.
uint64_t named_minimum(const remat::test::CommandResult& r) {
  INFO(r.err);
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.err.rfind("remat: error: memory budget of ", 0) == 0);
  REQUIRE(r.err.find('\n') == r.err.size() - 1);
  std::smatch m;
  REQUIRE(
      std::regex_search(r.err, m, std::regex("smallest plan's total of [^(]*\\((\\d+) bytes\\)")));
  return std::stoull(m[1].str());
}

std::string binding_alignment() {
  const auto devices = run_remat("devices --json");
  REQUIRE(devices.exit_code == 0);
  const double align =
      std::max(16.0, json_number(devices.out, "min_storage_buffer_offset_alignment"));
  return std::to_string(static_cast<int>(align));
}

}  // namespace

TEST_CASE("remat train --memory: one byte below the minimum exits 2, at the minimum it trains") {
  for (const std::string extra : {"", " --lora 4", " --loss-chunk 64"}) {
    DYNAMIC_SECTION("train" << extra) {
      const uint64_t m0 = named_minimum(run_remat(kTrain + extra + " --memory 1KiB"));
      CHECK(named_minimum(run_remat(kTrain + extra + " --memory " + std::to_string(m0 - 1))) == m0);
      // remat plan, at the device's alignment, names the same minimum.
      CHECK(named_minimum(run_remat("plan " + kShape + extra + " --alignment " +
                                    binding_alignment() + " --memory 1KiB")) == m0);
      const auto ok = run_remat(kTrain + extra + " --memory " + std::to_string(m0));
      INFO(ok.out << ok.err);
      REQUIRE(ok.exit_code == 0);
      CHECK(ok.out.find("memory cap") != std::string::npos);
      CHECK(ok.out.find("(exactly as plan)") != std::string::npos);
    }
  }
}

TEST_CASE("remat train --memory with --arena checks both") {
  const uint64_t m0 = named_minimum(run_remat(kTrain + " --memory 1KiB"));
  // Room for any arena, but an arena cap of 1 KiB: the arena's own error.
  const auto arena = run_remat(kTrain + " --memory " + std::to_string(2 * m0) + " --arena 1KiB");
  INFO(arena.err);
  CHECK(arena.exit_code == 2);
  CHECK(arena.err.find("arena budget") != std::string::npos);
  CHECK(arena.err.find("memory budget") == std::string::npos);
  // A generous arena cap, a memory budget one byte short: the memory error.
  CHECK(named_minimum(
            run_remat(kTrain + " --memory " + std::to_string(m0 - 1) + " --arena 1GiB")) == m0);
}

TEST_CASE("remat plan --memory prints and writes the session total next to the budget") {
  const auto human = run_remat("plan " + kShape + " --lora 4 --memory 64MiB");
  INFO(human.err);
  REQUIRE(human.exit_code == 0);
  CHECK(human.out.find("memory cap 64.00 MiB") != std::string::npos);
  CHECK(human.out.find("session total") != std::string::npos);
  CHECK(human.out.find("frozen weights") != std::string::npos);
  const auto json = run_remat("plan " + kShape + " --memory 64MiB --json");
  REQUIRE(json.exit_code == 0);
  const remat::JsonValue doc = remat::parse_json(json.out);
  const remat::JsonValue* s = doc.find("session");
  REQUIRE(s);
  CHECK(s->find("budget_bytes")->number == 64.0 * 1024 * 1024);
  const double total = s->find("total_bytes")->number;
  CHECK(total <= 64.0 * 1024 * 1024);
  CHECK(total == s->find("trainable_bytes")->number + s->find("frozen_bytes")->number +
                     s->find("io_bytes")->number + s->find("arena_bytes")->number +
                     s->find("extras")->find("step io staging")->number +
                     s->find("extras")->find("AdamW hyperparameters")->number +
                     s->find("extras")->find("grad-norm partials")->number +
                     s->find("extras")->find("optimizer table")->number);
}

TEST_CASE("remat bench --sweep-configs measures each configuration under --memory budgets") {
  remat::test::TempFolder dir("memory_cli_configs");
  const auto r = run_remat("bench " + kShape + " --sweep-configs --points 2 --steps 1 " +
                           "--warmup 0 --no-plot --out " + dir.path().string());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const remat::JsonValue doc = remat::parse_json(remat::test::read_text(dir / "configs.json"));
  std::map<std::string, int> measured;
  for (const remat::JsonValue& p : doc.find("points")->array) {
    const std::string config = p.find("config")->string;
    if (p.find("error")) continue;  // a configuration whose flags this build lacks
    ++measured[config];
    // Whole-session bytes: within the budget, and what the device ledger measured.
    CHECK(p.find("planned_total_bytes")->number <= p.find("budget_bytes")->number);
    CHECK(p.find("device_bytes_allocated")->number == p.find("planned_total_bytes")->number);
    CHECK(p.find("median_step_ms")->number > 0);
  }
  CHECK(measured["full fine-tune, f32"] == 2);
  CHECK(measured["LoRA r8, f32 base"] == 2);
  const std::string csv = remat::test::read_text(dir / "configs.csv");
  CHECK(csv.rfind("config,budget_bytes,planned_total_bytes,device_bytes_allocated,", 0) == 0);
  // The sweep sets the budgets and --lora itself.
  CHECK(run_remat("bench " + kShape + " --sweep-configs --memory 1GiB").exit_code == 2);
  CHECK(run_remat("bench " + kShape + " --sweep-configs --lora 4").exit_code == 2);
}

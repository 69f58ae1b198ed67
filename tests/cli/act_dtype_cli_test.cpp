// `remat plan --act-dtype` and `remat train --act-dtype` as a user runs them: train allocates the
// arena plan reports for 16-bit activations, a state records the dtype, a resumed run keeps it,
// and 16-bit activations combine with a 16-bit frozen base.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "tests/support/json_number.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_folder.h"

using remat::test::json_number;
using remat::test::run_remat;

namespace {

const std::string kShape = "tiny --layers 2 --batch 2 --seq 16 --dropout 0.1";
const std::string kData = "--data /usr/share/common-licenses/GPL-3";

}  // namespace

TEST_CASE("remat train --act-dtype bf16 allocates the arena remat plan reports") {
  remat::test::TempFolder dir("act_dtype_cli");
  const auto devices = run_remat("devices --json");
  REQUIRE(devices.exit_code == 0);
  const double align =
      std::max(16.0, json_number(devices.out, "min_storage_buffer_offset_alignment"));
  const std::string align_flag = " --alignment " + std::to_string(static_cast<int>(align));
  const auto plan = run_remat("plan " + kShape + " --act-dtype bf16 --json" + align_flag);
  const auto plan32 = run_remat("plan " + kShape + " --json" + align_flag);
  INFO(plan.err);
  REQUIRE(plan.exit_code == 0);
  REQUIRE(plan32.exit_code == 0);
  CHECK(json_number(plan.out, "arena_bytes") < 0.75 * json_number(plan32.out, "arena_bytes"));
  const std::string log = (dir / "log.json").string();
  const auto train = run_remat("train " + kShape + " --act-dtype bf16 --steps 2 --quiet " + kData +
                               " --log-json " + log);
  INFO(train.err);
  REQUIRE(train.exit_code == 0);
  CHECK(train.out.find("activations bf16") != std::string::npos);
  CHECK(train.out.find("(exactly as plan)") != std::string::npos);
  const std::string text = remat::test::read_text(log);
  const std::string summary = text.substr(text.rfind("{\"summary\""));
  CHECK(json_number(summary, "arena_bytes") == json_number(plan.out, "arena_bytes"));
  CHECK(json_number(summary, "device_bytes_allocated") ==
        json_number(summary, "planned_total_bytes"));
}

TEST_CASE("a training state records --act-dtype, a resumed run keeps it and refuses another") {
  remat::test::TempFolder dir("act_dtype_state");
  const std::string state = (dir / "run.state").string();
  const auto first = run_remat("train " + kShape + " --act-dtype f16 --steps 1 --quiet " + kData +
                               " --save-state " + state);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const auto resumed = run_remat("train --resume " + state + " --steps 2 --quiet");
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.out.find("activations f16") != std::string::npos);
  const auto other = run_remat("train --resume " + state + " --steps 2 --act-dtype bf16");
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("--act-dtype bf16 differs from the state's f16") != std::string::npos);
}

TEST_CASE("bf16 activations on a bf16 LoRA base: a smaller planned total, and train runs it") {
  const std::string gpt2 =
      "plan gpt2 --batch 4 --seq 64 --lora 8 --weights-dtype bf16 --loss-chunk 64 --json";
  const auto both = run_remat(gpt2 + " --act-dtype bf16");
  const auto weights_only = run_remat(gpt2);
  INFO(both.err);
  REQUIRE(both.exit_code == 0);
  REQUIRE(weights_only.exit_code == 0);
  CHECK(json_number(both.out, "total_bytes") < json_number(weights_only.out, "total_bytes"));

  const auto train = run_remat("train " + kShape +
                               " --lora 4 --weights-dtype bf16 --act-dtype bf16 --loss-chunk 64 "
                               "--steps 2 --quiet " +
                               kData);
  INFO(train.err);
  REQUIRE(train.exit_code == 0);
  CHECK(train.out.find("activations bf16") != std::string::npos);
  CHECK(train.out.find("(exactly as plan)") != std::string::npos);
}

// `remat plan --lora` and `remat train --lora` as a user runs them: the plan and train report the
// same bytes, PEFT's files are written and continued, the merged weights load as a GPT-2
// checkpoint, and bad LoRA flags exit 2 with one line naming the flag.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "base/json.h"
#include "tests/support/json_number.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_folder.h"

using remat::test::json_number;
using remat::test::run_remat;

namespace {

const std::string kShape = "tiny --layers 2 --batch 2 --seq 16";
const std::string kData = "--data /usr/share/common-licenses/GPL-3";

void require_usage_error(const std::string& args, const std::string& names) {
  const auto r = run_remat(args);
  INFO(args << "\n" << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("remat: error: ", 0) == 0);
  CHECK(r.err.find(names) != std::string::npos);
  CHECK(r.err.find('\n') == r.err.size() - 1);
}

}  // namespace

TEST_CASE("remat plan --lora reports the adapters and the bytes train allocates") {
  remat::test::TempFolder dir("lora_cli_plan");
  // Train lays tensors out at the device's binding alignment (at least 16); plan at the same.
  const auto devices = run_remat("devices --json");
  REQUIRE(devices.exit_code == 0);
  const double align =
      std::max(16.0, json_number(devices.out, "min_storage_buffer_offset_alignment"));
  const auto plan = run_remat("plan " + kShape + " --lora 4 --json --alignment " +
                              std::to_string(static_cast<int>(align)));
  INFO(plan.err);
  REQUIRE(plan.exit_code == 0);
  const remat::JsonValue doc = remat::parse_json(plan.out);
  const remat::JsonValue* lora = doc.find("lora");
  REQUIRE(lora);
  CHECK(lora->find("r")->number == 4);
  CHECK(lora->find("alpha")->number == 8);
  CHECK(lora->find("full_finetune_persistent_bytes")->number >
        2 * json_number(plan.out, "persistent_bytes"));
  const std::string log = (dir / "log.json").string();
  const auto train =
      run_remat("train " + kShape + " --lora 4 --steps 2 --quiet " + kData + " --log-json " + log);
  INFO(train.err);
  REQUIRE(train.exit_code == 0);
  CHECK(train.out.find("(exactly as plan)") != std::string::npos);
  const std::string text = remat::test::read_text(log);
  const std::string summary = text.substr(text.rfind("{\"summary\""));
  CHECK(json_number(summary, "persistent_bytes") == json_number(plan.out, "persistent_bytes"));
  CHECK(json_number(summary, "arena_bytes") == json_number(plan.out, "arena_bytes"));
  CHECK(json_number(summary, "device_bytes_allocated") ==
        json_number(summary, "planned_total_bytes"));
}

TEST_CASE("remat train --lora writes PEFT's files, continues them, and merges") {
  remat::test::TempFolder dir("lora_cli_train");
  const std::string ad = (dir / "adapter").string(), merged = (dir / "merged.safetensors").string();
  const std::string common = kShape + " --steps 2 --quiet " + kData;
  auto r =
      run_remat("train " + common + " --lora 3 --lora-targets c_attn,mlp.c_fc --save-adapter " +
                ad + " --merge-out " + merged);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string config = remat::test::read_text(dir / "adapter" / "adapter_config.json");
  CHECK(config.find("\"target_modules\": [\n    \"c_attn\",\n    \"mlp.c_fc\"\n  ]") !=
        std::string::npos);
  CHECK(config.find("\"fan_in_fan_out\": true") != std::string::npos);
  // Continuing takes r, alpha and targets from the adapter; the merged file is a GPT-2 checkpoint.
  r = run_remat("train " + common + " --lora-init " + ad + " --save-adapter " + ad);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  r = run_remat("train --init " + merged + " --batch 2 --seq 16 --steps 1 --quiet " + kData);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  require_usage_error("train " + common + " --lora-init " + ad + " --lora 4",
                      "not the requested rank 4");
  require_usage_error("train " + common + " --lora-init " + ad + " --lora 3 --lora-targets c_attn",
                      "not the requested c_attn");
}

TEST_CASE("bad LoRA flags exit 2 with one line naming the flag") {
  require_usage_error("plan " + kShape + " --lora 0", "--lora");
  require_usage_error("plan " + kShape + " --lora-alpha 4", "--lora-alpha and --lora-targets need");
  require_usage_error("plan " + kShape + " --lora 2 --lora-targets q_proj", "'q_proj'");
  require_usage_error("plan " + kShape + " --lora 2 --lora-targets c_attn,", "empty item");
  require_usage_error("plan " + kShape + " --lora 2 --lora-alpha -1", "--lora-alpha");
  require_usage_error("train " + kShape + " " + kData + " --lora 2 --save x.safetensors",
                      "--save-adapter");
  require_usage_error("train " + kShape + " " + kData + " --merge-out m.safetensors",
                      "need --lora");
  require_usage_error("train " + kShape + " " + kData + " --lora 2 --save-adapter /nonexistent/a",
                      "no such folder");
  require_usage_error("train " + kShape + " " + kData + " --lora-init /nonexistent", "--lora-init");
  require_usage_error("plan " + kShape + " --weights-dtype bf16",
                      "--weights-dtype bf16 applies to frozen weights: use it with --lora");
  require_usage_error("bench " + kShape + " --weights-dtype f16",
                      "--weights-dtype f16 applies to frozen weights: use it with --lora");
  require_usage_error("plan " + kShape + " --lora 2 --weights-dtype q4", "--weights-dtype");
}

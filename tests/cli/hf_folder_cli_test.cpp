// Hugging Face model folders on the command line: `remat train --save DIR` writes one, and
// `remat plan --init DIR` and `remat train --init DIR` take their model from its config.json.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "base/atomic_file.h"
#include "base/json_file.h"
#include "formats/hf_config.h"
#include "tests/support/json_number.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_folder.h"

using remat::test::json_number;
using remat::test::run_remat;
namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& p) {
  return "'" + p.string() + "'";
}

std::string read_text(const fs::path& p) {
  const auto bytes = remat::test::read_bytes(p);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace

TEST_CASE("a folder saved by remat train sets the model of plan and train") {
  remat::test::TempFolder d("hf_folder_cli");
  std::string text;
  while (text.size() < 2048) text += "a folder holds config.json and model.safetensors. ";
  remat::write_file_atomically(d / "data.txt", text);
  const std::string data = " --data " + quoted(d / "data.txt") + " --batch 2 --seq 16 --quiet";
  const auto first = run_remat("train --layers 2 --dim 32 --heads 2 --ctx 24 --steps 2" + data +
                               " --save " + quoted(d / "model"));
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const remat::ModelConfig saved =
      remat::model_config_from_hf(remat::read_json_file(d / "model" / "config.json"));
  CHECK(saved == remat::ModelConfig{2, 32, 2, 256, 24});
  CHECK(fs::exists(d / "model" / "model.safetensors"));

  const auto plan = run_remat("plan --init " + quoted(d / "model") + " --batch 2 --seq 16 --json");
  INFO(plan.err);
  REQUIRE(plan.exit_code == 0);
  CHECK(json_number(plan.out, "layers") == 2);
  CHECK(json_number(plan.out, "ctx") == 24);

  // Continuing from the folder starts from the saved weights: its first loss is the loss the
  // first run reached, not a fresh model's.
  const auto fresh = run_remat("train --layers 2 --dim 32 --heads 2 --ctx 24 --steps 1" + data +
                               " --log-json " + quoted(d / "fresh.json"));
  const auto again =
      run_remat("train --init " + quoted(d / "model") + " --steps 1" + data + " --save " +
                quoted(d / "model") + " --log-json " + quoted(d / "again.json"));
  INFO(again.err);
  REQUIRE(fresh.exit_code == 0);
  REQUIRE(again.exit_code == 0);
  const double fresh_loss = json_number(read_text(d / "fresh.json"), "loss");
  const double again_loss = json_number(read_text(d / "again.json"), "loss");
  CHECK(again_loss < fresh_loss);
}

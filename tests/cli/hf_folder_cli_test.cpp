// Hugging Face model folders on the command line: `remat train --save DIR` writes one, and
// `remat plan --init DIR` and `remat train --init DIR` take their model from its config.json.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "base/atomic_file.h"
#include "base/json_file.h"
#include "formats/hf_config.h"
#include "formats/hf_config_keys.h"
#include "formats/model_metadata.h"
#include "formats/safetensors.h"
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

remat::JsonValue json_string(const std::string& s) {
  remat::JsonValue v;
  v.type = remat::JsonValue::Type::string;
  v.string = s;
  return v;
}

// A Llama config.json rewritten as transformers 5 saves it: rope_theta moved into
// rope_parameters (RotaryEmbeddingConfigMixin.convert_rope_params_to_dict), torch_dtype renamed
// dtype.
std::string as_transformers5(remat::JsonValue c) {
  remat::JsonValue rope;
  rope.type = remat::JsonValue::Type::object;
  rope.object["rope_type"] = json_string("default");
  rope.object["rope_theta"] = c.object.at("rope_theta");
  c.object.erase("rope_theta");
  c.object.erase("rope_scaling");
  c.object.erase("torch_dtype");
  c.object["rope_parameters"] = rope;
  c.object["dtype"] = json_string("bfloat16");
  return remat::json_text(c);
}

bool has(const remat::JsonValue& doc, const char* key) {
  return doc.find(key) != nullptr;
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

TEST_CASE("a transformers 5 folder is trained and saved in transformers 5's keys") {
  remat::test::TempFolder d("hf_folder_cli_v5");
  std::string text;
  while (text.size() < 2048) text += "rope_parameters hold the base of the rotary embedding. ";
  remat::write_file_atomically(d / "data.txt", text);
  const std::string data = " --data " + quoted(d / "data.txt") + " --batch 2 --seq 16 --quiet";
  const auto first = run_remat("train llama-tiny --layers 2 --ctx 24 --rope-theta 5e5 --steps 1" +
                               data + " --save " + quoted(d / "v4"));
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  fs::create_directory(d / "v5");
  fs::copy_file(d / "v4" / "model.safetensors", d / "v5" / "model.safetensors");
  remat::write_file_atomically(d / "v5" / "config.json",
                               as_transformers5(remat::read_json_file(d / "v4" / "config.json")));

  const auto v5 = run_remat("train --init " + quoted(d / "v5") + " --steps 1" + data + " --save " +
                            quoted(d / "out5"));
  INFO(v5.err);
  REQUIRE(v5.exit_code == 0);
  const remat::JsonValue saved5 = remat::read_json_file(d / "out5" / "config.json");
  CHECK(has(saved5, "rope_parameters"));
  CHECK(has(saved5, "dtype"));
  CHECK_FALSE(has(saved5, "rope_theta"));
  CHECK_FALSE(has(saved5, "torch_dtype"));
  CHECK(saved5.find("rope_parameters")->find("rope_theta")->number == 500000.0);
  // The transformers 4 folder it came from saves as before.
  const auto v4 = run_remat("train --init " + quoted(d / "v4") + " --steps 1" + data + " --save " +
                            quoted(d / "out4"));
  INFO(v4.err);
  REQUIRE(v4.exit_code == 0);
  const remat::JsonValue saved4 = remat::read_json_file(d / "out4" / "config.json");
  CHECK(has(saved4, "rope_theta"));
  CHECK(has(saved4, "torch_dtype"));
  CHECK_FALSE(has(saved4, "rope_parameters"));
  CHECK(remat::model_config_from_hf(saved5) == remat::model_config_from_hf(saved4));

  // LoRA's merged weights carry the same spelling in their config metadata.
  const auto merged = run_remat("train --init " + quoted(d / "v5") + " --lora 4 --steps 1" + data +
                                " --merge-out " + quoted(d / "merged.safetensors"));
  INFO(merged.err);
  REQUIRE(merged.exit_code == 0);
  const remat::SafetensorsContents file = remat::read_safetensors(d / "merged.safetensors");
  const remat::JsonValue meta = remat::parse_json(file.metadata.at(remat::kConfigMetadataKey));
  CHECK(has(meta, "rope_parameters"));
  CHECK_FALSE(has(meta, "torch_dtype"));
}

// Device profiles from the command line: `remat devices --profiles` lists them, --device-profile
// and REMAT_DEVICE_PROFILE make the device act within one, an unknown name is one line, and under
// every profile GPT-2-shaped LoRA and a QLoRA Llama train with the losses of the unclamped device
// wherever the kernels chosen are the same, or are refused with the limit that stops them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "graph/model_builder.h"
#include "runtime/vulkan/device_profiles.h"
#include "tests/support/gguf_model_files.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_folder.h"

using namespace remat;
using remat::test::run_command;
using remat::test::run_remat;

namespace {

std::string quoted(const std::filesystem::path& p) {
  return "'" + p.string() + "'";
}

std::string profile_flag(std::string_view profile) {
  return profile.empty() ? "" : " --device-profile " + std::string(profile);
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The kernel choices (`remat devices --json`, "kernels") of the device remat uses, as text: equal
// text, equal kernels.
std::string chosen_kernels(std::string_view profile) {
  const auto r = run_remat("devices --json" + profile_flag(profile));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const JsonValue j = parse_json(r.out);
  const auto chosen = static_cast<std::size_t>(j.find("chosen")->number);
  const JsonValue& device = j.find("devices")->array.at(chosen);
  CHECK(device.find("profile")->string == profile);
  std::string text;
  for (const auto& [key, v] : device.find("kernels")->object) {
    text += key + "=";
    if (v.type == JsonValue::Type::string)
      text += v.string;
    else if (v.type == JsonValue::Type::boolean)
      text += v.boolean ? "yes" : "no";
    else
      text += std::to_string(v.number);
    text += " ";
  }
  return text;
}

struct Run {
  int exit_code = -1;
  std::string err;
  std::vector<std::string> losses;  // each step's "loss":VALUE as the log wrote it (exact)
};

Run train(const std::string& args, std::string_view profile, const test::TempFolder& dir) {
  const auto log = dir / ("log-" + std::string(profile) + ".jsonl");
  std::filesystem::remove(log);
  // Under the validation layer: a profile that turns a feature off must leave no kernel using it.
  const auto r = run_command("REMAT_VALIDATION=1 '" + std::string(REMAT_CLI_PATH) + "' train " +
                             args + " --data /usr/share/common-licenses/GPL-3 --steps 2 --quiet " +
                             "--log-json " + quoted(log) + profile_flag(profile));
  Run out{r.exit_code, r.err, {}};
  if (r.exit_code != 0) return out;
  std::istringstream lines(read_text(log));
  for (std::string line; std::getline(lines, line);) {
    const JsonValue j = parse_json(line);
    if (const JsonValue* messages = j.find("validation_messages")) {
      CHECK(messages->type == JsonValue::Type::number);
      CHECK(messages->number == 0);
    }
    const JsonValue* loss = j.find("loss");
    if (!loss) continue;  // the summary
    REQUIRE(std::isfinite(loss->number));
    // The writer's shortest round-trip text: equal text, equal bits.
    const auto at = line.find("\"loss\":");
    out.losses.push_back(line.substr(at, line.find(',', at) - at));
  }
  return out;
}

void write_qlora_llama(const std::filesystem::path& path) {
  const ModelConfig m = test::block_llama_model(256, 32, false);
  test::write_gguf_model(path, test::random_gguf_params(m, 11), m, GgufArch::llama, GgmlType::q8_0);
}

}  // namespace

TEST_CASE("remat devices --profiles lists every device profile with its source") {
  const auto text = run_remat("devices --profiles");
  INFO(text.err);
  REQUIRE(text.exit_code == 0);
  const auto json = run_remat("devices --profiles --json");
  REQUIRE(json.exit_code == 0);
  const JsonValue j = parse_json(json.out);
  REQUIRE(j.find("profiles")->array.size() == device_profiles().size());
  for (const DeviceProfile& p : device_profiles()) {
    INFO(p.name);
    CHECK(text.out.find(std::string(p.name) + " ") != std::string::npos);
    CHECK(text.out.find(std::string(p.source)) != std::string::npos);
  }
  // A value the source lacks is null, not a guess.
  const JsonValue& adreno = j.find("profiles")->array.at(2);
  CHECK(adreno.find("name")->string == "adreno-540");
  CHECK(adreno.find("max_memory_allocation_size")->type == JsonValue::Type::null);
  CHECK(adreno.find("max_storage_buffers_per_stage")->number == 24);
}

TEST_CASE("a device profile clamps what remat devices shows, by flag or environment") {
  const auto r = run_remat("devices --json --device-profile adreno-540");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const JsonValue d = parse_json(r.out).find("devices")->array.at(0);
  CHECK(d.find("profile")->string == "adreno-540");
  CHECK(d.find("name")->string.find(" as adreno-540") != std::string::npos);
  CHECK(d.find("max_texel_buffer_elements")->number <= 65536);
  CHECK(d.find("storage_16bit")->boolean == false);
  CHECK(d.find("kernels")->find("texel_fetch_matmuls")->boolean == false);
  const auto env =
      run_command("REMAT_DEVICE_PROFILE=mali-g78 '" + std::string(REMAT_CLI_PATH) + "' devices");
  REQUIRE(env.exit_code == 0);
  CHECK(env.out.find("within device profile mali-g78: Arm Mali-G78") != std::string::npos);
}

TEST_CASE("remat plan binds what the device profile allows") {
  const auto mali = run_remat("plan tiny --device-profile mali-g78");
  REQUIRE(mali.exit_code == 0);
  CHECK(mali.out.find("device profile mali-g78: bindings of at most 256.00 MiB\n") !=
        std::string::npos);
  const auto plain = run_remat("plan tiny");
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.out.find("device profile") == std::string::npos);
}

TEST_CASE("an unknown device profile is one line naming the known ones, exit 2") {
  const std::string known =
      "remat: error: unknown device profile 'mali-g99'; known profiles: " + device_profile_names() +
      "\n";
  for (const std::string cmd :
       {"devices --device-profile mali-g99", "plan tiny --device-profile mali-g99",
        "train tiny --data /usr/share/common-licenses/GPL-3 --device-profile mali-g99"}) {
    INFO(cmd);
    const auto r = run_remat(cmd);
    CHECK(r.exit_code == 2);
    CHECK(r.err == known);
  }
  const auto env =
      run_command("REMAT_DEVICE_PROFILE=mali-g99 '" + std::string(REMAT_CLI_PATH) + "' plan tiny");
  CHECK(env.exit_code == 2);
  CHECK(env.err == known);
}

TEST_CASE("GPT-2 LoRA and a QLoRA Llama train under every device profile, or name the limit") {
  test::TempFolder dir("device_profiles_cli");
  write_qlora_llama(dir / "q8.gguf");
  // GPT-2's vocabulary, so the head and its logits are GPT-2's width; one small block keeps the
  // step short on a CPU driver.
  const std::vector<std::string> models = {
      "tiny --vocab 50257 --layers 1 --dim 64 --heads 2 --lora 4 --batch 1 --seq 8",
      "--init " + quoted(dir / "q8.gguf") + " --lora 4 --batch 1 --seq 8"};
  const std::string plain_kernels = chosen_kernels("");
  std::vector<Run> plain;
  for (const std::string& m : models) {
    plain.push_back(train(m, "", dir));
    INFO(plain.back().err);
    REQUIRE(plain.back().exit_code == 0);
    REQUIRE(plain.back().losses.size() == 2);
  }
  int same_kernels = 0, refused = 0;
  for (const DeviceProfile& p : device_profiles()) {
    const bool same = chosen_kernels(p.name) == plain_kernels;
    for (std::size_t i = 0; i < models.size(); ++i) {
      INFO(p.name << ": " << models[i]);
      const Run r = train(models[i], p.name, dir);
      INFO(r.err);
      if (r.exit_code != 0) {
        // Refused before training: one line naming the limit in Vulkan's words.
        CHECK(r.exit_code == 2);
        CHECK(r.err.find("remat: error: ") == 0);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(r.err.find(" as " + std::string(p.name)) != std::string::npos);
        CHECK(r.err.find("(max") != std::string::npos);
        ++refused;
        continue;
      }
      REQUIRE(r.losses.size() == 2);
      if (same) CHECK(r.losses == plain[i].losses);
    }
    same_kernels += same;
  }
  // remat's 256-wide workgroups exceed the specification's least maxComputeWorkGroupInvocations.
  const Run minimum = train(models[0], "vulkan-minimum", dir);
  CHECK(minimum.err.find("invocations, but llvmpipe") != std::string::npos);
  CHECK(minimum.err.find("allows 128 (maxComputeWorkGroupInvocations)") != std::string::npos);
  CHECK(refused == 2);
  // Profiles that keep lavapipe's kernels exist (so the loss comparison ran), and so do ones
  // that change them (texel views too small or misaligned for the texel-fetch matmuls).
  CHECK(same_kernels >= 1);
  CHECK(same_kernels < int(device_profiles().size()));
}

// LoRA on Qwen3.5 through the C API: a session of the qwen3.5-tiny preset, or of a checkpoint
// `remat train` saved, trains rank-4 adapters on a text's bytes with the losses `remat train
// --lora` prints for the same settings, bit for bit; the PEFT adapter it saves is the CLI's, byte
// for byte, and a fresh session that loads it samples as the one that trained it. A model of
// Gated DeltaNet layers only plans with the default targets it has.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "remat/remat.h"
#include "tests/api/api_test_params.h"
#include "tests/api/check_error.h"
#include "tests/support/run_command.h"

using remat::test::check_error;
using remat::test::Handles;
namespace fs = std::filesystem;

namespace {

constexpr int kSteps = 8;

std::string file_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Each step's loss of a `remat train --log-json` file, as the float the step returned (the log
// writes the double it widens to, exactly).
std::vector<float> logged_losses(const fs::path& log) {
  std::vector<float> out;
  std::istringstream lines(file_text(log));
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find("\"loss\":");
    if (line.find("\"step\":") == std::string::npos || at == std::string::npos) continue;
    out.push_back(static_cast<float>(std::strtod(line.c_str() + at + 7, nullptr)));
  }
  return out;
}

// The CLI's defaults, set here so that the session is the run `remat train` makes of the flags.
remat_session_params lora_params(const char* init) {
  remat_session_params p;
  REQUIRE(remat_session_params_default(&p) == REMAT_OK);
  if (init) {
    INFO(init);
    REQUIRE(remat_session_params_from_file(&p, init) == REMAT_OK);
  } else {
    p.model = "qwen3.5-tiny";
  }
  p.batch = 2;
  p.seq = 16;
  p.learning_rate = 1e-2;
  p.beta1 = 0.9;
  p.beta2 = 0.999;
  p.eps = 1e-8;
  p.weight_decay = 0;
  p.grad_clip = 0;
  p.seed = 0;
  p.lora_rank = 4;
  p.pipeline_cache_dir = "";
  return p;
}

// A text of one short sentence over and over: every window alike, so the loss falls within a few
// steps.
fs::path write_text(const fs::path& dir) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "Gated DeltaNet keeps a state. ";
  const fs::path path = dir / "text.txt";
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// kSteps steps on the text's byte windows, batch s as `remat train --data` reads it.
std::vector<float> train(remat_session* session, const remat_session_params& p,
                         const fs::path& text) {
  remat_text_options o{};
  o.struct_size = sizeof o;
  o.seq = p.seq;
  o.format = REMAT_DATA_AUTO;
  o.vocab = 256;
  remat_examples* rows = nullptr;
  REQUIRE(remat_examples_load_text(text.c_str(), &o, &rows) == REMAT_OK);
  std::vector<float> losses;
  const std::size_t n = std::size_t(p.batch) * std::size_t(p.seq);
  std::vector<uint32_t> tokens(n), targets(n);
  for (int s = 0; s < kSteps; ++s) {
    REQUIRE(remat_examples_batch(rows, uint64_t(s), p.batch, tokens.data(), targets.data()) ==
            REMAT_OK);
    float loss = -1;
    REQUIRE(remat_session_step(session, tokens.data(), targets.data(), n, &loss) == REMAT_OK);
    losses.push_back(loss);
  }
  remat_examples_free(rows);
  return losses;
}

std::vector<uint32_t> greedy(remat_session* session) {
  const std::vector<uint32_t> prompt = {'T', 'h', 'e', ' '};
  std::vector<uint32_t> out(8);
  REQUIRE(remat_session_sample(session, prompt.data(), prompt.size(), 8, 1, 0.0f, out.data(),
                               out.size()) == REMAT_OK);
  return out;
}

}  // namespace

TEST_CASE("c api: a Qwen3.5 LoRA session trains as remat train --lora, and its adapter loads") {
  const auto dir = remat::test::scratch_dir("qwen35_lora");
  fs::create_directories(dir);
  const std::string text = write_text(dir).string();
  const std::string base = (dir / "base.safetensors").string();
  const auto saved =
      remat::test::run_remat("train qwen3.5-tiny --data '" + text + "'" +
                             " --batch 2 --seq 16 --steps 1 --quiet --save '" + base + "'");
  INFO(saved.err);
  REQUIRE(saved.exit_code == 0);
  for (const char* init : {static_cast<const char*>(nullptr), base.c_str()}) {
    const std::string name = init ? "file" : "preset";
    INFO(name);
    const fs::path log = dir / (name + ".json"), cli_adapter = dir / (name + "_cli");
    const auto cli = remat::test::run_remat(
        "train " + (init ? "--init '" + base + "'" : std::string("qwen3.5-tiny")) + " --data '" +
        text + "' --batch 2 --seq 16 --lr 1e-2 --lora 4 --steps " + std::to_string(kSteps) +
        " --quiet --log-json '" + log.string() + "' --save-adapter '" + cli_adapter.string() + "'");
    INFO(cli.err);
    REQUIRE(cli.exit_code == 0);

    const remat_session_params p = lora_params(init);
    Handles h;
    REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
    REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
    if (init) REQUIRE(remat_session_load_file(h.session, init) == REMAT_OK);
    const std::vector<float> losses = train(h.session, p, text);
    const std::vector<float> want = logged_losses(log);
    REQUIRE(want.size() == std::size_t(kSteps));
    for (int s = 0; s < kSteps; ++s) {
      INFO("step " << s + 1 << ": " << losses[s] << " vs " << want[s]);
      CHECK(std::memcmp(&losses[s], &want[s], sizeof(float)) == 0);
    }
    CHECK(losses.back() < losses.front());

    const fs::path adapter = dir / (name + "_api");
    REQUIRE(remat_session_save_adapter(h.session, adapter.c_str()) == REMAT_OK);
    const std::string bytes = file_text(adapter / "adapter_model.safetensors");
    CHECK(bytes.size() > 1000);
    CHECK(bytes == file_text(cli_adapter / "adapter_model.safetensors"));
    Handles g;
    REQUIRE(remat_device_open(nullptr, &g.device) == REMAT_OK);
    REQUIRE(remat_session_create(g.device, &p, &g.session) == REMAT_OK);
    if (init) REQUIRE(remat_session_load_file(g.session, init) == REMAT_OK);
    const std::vector<uint32_t> fresh = greedy(g.session);
    REQUIRE(remat_session_load_adapter(g.session, adapter.c_str()) == REMAT_OK);
    const std::vector<uint32_t> tuned = greedy(h.session);
    CHECK(greedy(g.session) == tuned);
    CHECK(fresh != tuned);  // the adapter changed what the model says
  }
  fs::remove_all(dir);
}

// One layer of qwen3.5-tiny is a Gated DeltaNet layer: the default targets are its projections
// and the MLP's (graph/lora.h), while a named attention projection matches nothing.
TEST_CASE("c api: LoRA on Qwen3.5 layers that are all Gated DeltaNet plans with their targets") {
  remat_session_params p = lora_params(nullptr);
  p.layers = 1;
  remat_plan_report r{sizeof(remat_plan_report)};
  REQUIRE(remat_plan(&p, &r) == REMAT_OK);
  CHECK(r.delta_chunk > 0);
  p.lora_targets = "q_proj";
  check_error(remat_plan(&p, &r), REMAT_ERROR_INVALID_ARGUMENT,
              "LoRA target 'q_proj' names no linear layer of this model");
}

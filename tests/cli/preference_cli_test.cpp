// `remat train --objective dpo|kto` as a user runs it, with GPT-2's tokenizer on TRL-format
// JSONL: a DPO run stopped and resumed ends with adapters and per-step losses byte-identical to
// a run never stopped (the reference log-probs come back from the state); the log carries TRL's
// metrics per step; KTO trains on labelled examples; bad data and options get one line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_command.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"

using remat::test::run_remat;

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The `"loss":...` text of each step line of a --log-json file (numbers are written exactly).
std::vector<std::string> step_losses(const std::filesystem::path& log) {
  std::vector<std::string> out;
  std::istringstream lines(slurp(log));
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"step\"") == std::string::npos) continue;
    const auto at = line.find("\"loss\":");
    out.push_back(line.substr(at, line.find(',', at) - at));
  }
  return out;
}

const char* kPairs =
    "{\"prompt\": \"Name a colour.\", \"chosen\": \" Blue.\", \"rejected\": \" Red.\"}\n"
    "{\"prompt\": \"Which colour?\", \"chosen\": \" Blue.\", \"rejected\": \" Red.\"}\n"
    "{\"prompt\": \"A colour, please.\", \"chosen\": \" Blue.\", \"rejected\": \" Red.\"}\n";

std::string dpo_run(const remat::test::TempFolder& d) {
  return "train tiny --vocab 50257 " + remat::test::gpt2_tokenizer_flag() + "--data " +
         d.quoted("pairs.jsonl") + " --objective dpo --beta 0.2 --batch 2 --seq 16 --lr 1e-3 " +
         "--lora 4 --steps 4 --quiet ";
}

}  // namespace

TEST_CASE("train --objective dpo: stopped and resumed, byte-identical to a run never stopped") {
  remat::test::TempFolder d("pref_cli_resume");
  d.write("pairs.jsonl", kPairs);
  const auto whole = run_remat(dpo_run(d) + "--save-adapter " + d.quoted("a1") + " --log-json " +
                               d.quoted("whole.json"));
  REQUIRE(whole.exit_code == 0);
  const auto stopped = run_remat(dpo_run(d) + "--stop-at 2 --save-state " + d.quoted("state") +
                                 " --log-json " + d.quoted("first.json"));
  REQUIRE(stopped.exit_code == 0);
  REQUIRE(slurp(d.path() / "state" / "state.json").find("reference_logps") != std::string::npos);
  const auto resumed =
      run_remat("train --resume " + d.quoted("state") + " --quiet " + "--save-adapter " +
                d.quoted("a2") + " --log-json " + d.quoted("rest.json"));
  INFO(resumed.out << resumed.err);
  REQUIRE(resumed.exit_code == 0);
  auto losses = step_losses(d.path() / "first.json");
  for (const auto& l : step_losses(d.path() / "rest.json")) losses.push_back(l);
  const auto expected = step_losses(d.path() / "whole.json");
  REQUIRE(expected.size() == 4);
  CHECK(losses == expected);
  const std::string a1 = slurp(d.path() / "a1" / "adapter_model.safetensors");
  CHECK(a1.size() > 1000);
  CHECK(slurp(d.path() / "a2" / "adapter_model.safetensors") == a1);
  // TRL's metrics, each step.
  const std::string log = slurp(d.path() / "whole.json");
  for (const char* name : {"rewards/chosen", "rewards/rejected", "rewards/accuracies",
                           "rewards/margins", "logps/chosen", "logps/rejected"})
    CHECK(log.find(std::string("\"") + name + "\":") != std::string::npos);
  // A resumed run that changes the objective's options is refused in one line.
  const auto beta = run_remat("train --resume " + d.quoted("state") + " --beta 0.3 --quiet");
  CHECK(beta.exit_code == 2);
  CHECK(beta.err.find("--beta") != std::string::npos);
}

TEST_CASE("train --objective kto trains on labelled examples and logs the KL estimate") {
  remat::test::TempFolder d("pref_cli_kto");
  d.write("feedback.jsonl",
          "{\"prompt\": \"Name a colour.\", \"completion\": \" Blue.\", \"label\": true}\n"
          "{\"prompt\": \"Which colour?\", \"completion\": \" Red.\", \"label\": false}\n"
          "{\"prompt\": \"A colour, please.\", \"completion\": \" Blue.\", \"label\": true}\n");
  const auto r = run_remat("train tiny --vocab 50257 " + remat::test::gpt2_tokenizer_flag() +
                           "--data " + d.quoted("feedback.jsonl") +
                           " --objective kto --batch 2 --seq 16 --steps 3 --lr 1e-3 "
                           "--undesirable-weight 1.5 --log-json " +
                           d.quoted("kto.json"));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("2 desirable, 1 undesirable") != std::string::npos);
  CHECK(r.out.find("reference log-probs: precomputed (3 examples, host") != std::string::npos);
  const std::string log = slurp(d.path() / "kto.json");
  CHECK(log.find("\"kl\":") != std::string::npos);
  CHECK(log.find("\"loss\":") != std::string::npos);
}

TEST_CASE("train --objective: bad data and options get one line") {
  remat::test::TempFolder d("pref_cli_errors");
  d.write("same.jsonl",
          "{\"prompt\": \"Q\", \"chosen\": \" A\", \"rejected\": \" B\"}\n"
          "{\"prompt\": \"Q\", \"chosen\": \" A\", \"rejected\": \" A\"}\n");
  d.write("pairs.jsonl", kPairs);
  const std::string tok = remat::test::gpt2_tokenizer_flag();
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"--data " + d.quoted("same.jsonl") + " --objective dpo", "line 2"},
      {"--data " + d.quoted("pairs.jsonl") + " --objective kto", "line 1"},
      {"--data " + d.quoted("pairs.jsonl") + " --objective ipo",
       "--objective must be sft, dpo or kto"},
      {"--data " + d.quoted("pairs.jsonl") + " --objective kto --label-smoothing 0.1",
       "--label-smoothing is not an option of --objective kto"},
      {"--data " + d.quoted("pairs.jsonl") + " --objective dpo --pack",
       "--pack is not available with --objective dpo"},
  };
  for (const Case& c : cases) {
    const auto r = run_remat("train tiny --vocab 50257 " + tok + c.args + " --steps 1 --seq 16");
    INFO(c.args << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("remat: error: ", 0) == 0);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("plan --objective dpo plans two rows a pair with one loss scale per row") {
  const auto sft = run_remat("plan tiny --batch 4 --seq 16 --json");
  const auto dpo = run_remat("plan tiny --objective dpo --batch 2 --seq 16");
  REQUIRE(dpo.exit_code == 0);
  CHECK(dpo.out.find("objective dpo: 2 pairs of 2 rows (batch 4 rows), one loss scale per row "
                     "(256 B in the hyperparameter block); reference log-probs: precomputed") !=
        std::string::npos);
  // The same rows as SFT's batch of 4: the same arena.
  const auto dpo_json = run_remat("plan tiny --objective dpo --batch 2 --seq 16 --json");
  const auto arena = [](const std::string& json) {
    const auto at = json.find("\"arena_bytes\":");
    return json.substr(at, json.find(',', at) - at);
  };
  CHECK(arena(dpo_json.out) == arena(sft.out));
  // --json says the same: the preference shape and the reference's choice.
  const auto compact = [](std::string json) {
    std::erase_if(json, [](char c) { return c == ' ' || c == '\n'; });
    return json;
  };
  CHECK(compact(dpo_json.out)
            .find("\"objective\":{\"name\":\"dpo\",\"examples\":2,\"rows_per_example\":2,"
                  "\"row_loss_scale_bytes\":256,\"reference\":\"precomputed\","
                  "\"reference_place\":\"host\",\"reference_bytes_per_answer\":8}") !=
        std::string::npos);
  CHECK(compact(sft.out).find("\"objective\":{\"name\":\"sft\"}") != std::string::npos);
  const auto bad = run_remat("plan tiny --objective ipo");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--objective must be sft, dpo or kto") != std::string::npos);
}

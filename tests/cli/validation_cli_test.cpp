// `remat train --val-data`: the held-out loss is printed and logged at the steps asked for, and
// a run that evaluates trains exactly like one that does not (same log losses, same weights).
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "tests/support/json_number.h"
#include "tests/support/run_command.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"

using remat::test::json_number;
using remat::test::run_remat;

namespace {

const std::string kSmall = "--layers 1 --dim 32 --heads 2 --ctx 16 --seq 16 --batch 2 --lr 1e-2 ";
const std::string kTrain = "/usr/share/common-licenses/GPL-3";
const std::string kHeldOut = "/usr/share/common-licenses/LGPL-2.1";

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("remat train --val-data logs the held-out loss every K steps without changing training") {
  remat::test::TempFolder d("validation_cli");
  const std::string common = "train " + kSmall + "--steps 6 --data " + kTrain + " ";
  const auto plain = run_remat(common + "--save " + d.quoted("plain.safetensors") + " --log-json " +
                               d.quoted("plain.jsonl"));
  const auto val =
      run_remat(common + "--val-data " + kHeldOut + " --val-every 3 --val-batches 4 " + "--save " +
                d.quoted("val.safetensors") + " --log-json " + d.quoted("val.jsonl"));
  INFO(val.err);
  REQUIRE(plain.exit_code == 0);
  REQUIRE(val.exit_code == 0);
  CHECK(val.out.find("4 batches of 2 × 16 evaluated, dropout off") != std::string::npos);
  CHECK(val.out.find("val      step 0/6  loss ") != std::string::npos);
  CHECK(val.out.find("val      step 3/6  loss ") != std::string::npos);
  CHECK(val.out.find("val      step 6/6  loss ") != std::string::npos);
  CHECK(val.out.find("val      step 1/6") == std::string::npos);

  // Same weights, byte for byte, and the same per-step losses and gradient norms.
  CHECK(d.read("val.safetensors") == d.read("plain.safetensors"));
  const auto with = lines(d.read("val.jsonl")), without = lines(d.read("plain.jsonl"));
  REQUIRE(with.size() == 7);
  REQUIRE(without.size() == 7);
  for (int s = 0; s < 6; ++s) {
    INFO("step " << s + 1);
    CHECK(json_number(with[s], "loss") == json_number(without[s], "loss"));
    CHECK(json_number(with[s], "grad_norm") == json_number(without[s], "grad_norm"));
    const bool evaluated = (s + 1) % 3 == 0;
    CHECK((json_number(with[s], "val_loss") > 0) == evaluated);
    CHECK(json_number(without[s], "val_loss") == -1);
  }
  const std::string& summary = with.back();
  CHECK(json_number(summary, "val_batches") == 4);
  // Six steps at lr 1e-2 on English text lower the loss on other English text too.
  const double first = json_number(summary, "initial_val_loss");
  const double last = json_number(summary, "final_val_loss");
  CHECK(last == json_number(with[5], "val_loss"));
  CHECK(first > last);
  CHECK(first > 5.0);  // near ln 256 for the untrained model
}

TEST_CASE(
    "remat train --val-data evaluates fewer batches when the file holds fewer distinct windows") {
  remat::test::TempFolder d("validation_short");
  // 100 bytes: windows start at 0, 16, ..., 80 before the wrap (80 <= 100 - 16 - 2), six of
  // them: three batches of two.
  d.write("short.txt", std::string(100, 'a'));
  const auto r = run_remat("train " + kSmall + "--steps 1 --data " + kTrain + " --val-data " +
                           d.quoted("short.txt"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("3 batches of 2 × 16 evaluated") != std::string::npos);
}

TEST_CASE("remat train --val-data refusals") {
  remat::test::TempFolder d("validation_refusals");
  d.write("tiny.txt", "too short");
  const std::string train = "train " + kSmall + "--steps 1 --data " + kTrain + " ";
  std::vector<std::pair<std::string, std::string>> cases = {
      {train + "--val-every 2", "--val-every and --val-batches need --val-data FILE"},
      {train + "--val-batches 2", "--val-every and --val-batches need --val-data FILE"},
      {train + "--val-data " + d.quoted("missing.txt"), "missing.txt"},
      {train + "--val-data " + d.quoted("tiny.txt"), "tiny.txt"},
      {train + "--val-data " + kHeldOut + " --val-every 0", "--val-every"},
  };
  if (remat::test::have_gpt2_files()) {
    REQUIRE(run_remat("tokenize " + remat::test::gpt2_tokenizer_flag() + "--out " +
                      d.quoted("lgpl.bin") + " " + kHeldOut)
                .exit_code == 0);
    cases.push_back(
        {train + "--val-data " + d.quoted("lgpl.bin"),
         "reads as tokens but --data as bytes; give both as text, both as token files"});
  }
  for (const auto& [args, fragment] : cases) {
    const auto r = run_remat(args);
    INFO("remat " << args << "\nstderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("remat: error: ", 0) == 0);
    CHECK(r.err.find(fragment) != std::string::npos);
    CHECK(r.out.empty());
  }
}

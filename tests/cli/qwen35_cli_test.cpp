// `remat train` and `remat generate` on Qwen3.5 (Gated DeltaNet layers) from the command line:
// the qwen3.5-tiny preset trains from seeded weights, saves, and the saved file generates; a
// preference run (DPO, KTO) chooses and reports the delta rule's chunk as an SFT run does.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <utility>

#include "tests/api/tiny_tokenizer.h"
#include "tests/support/run_command.h"
#include "tests/text/temp_folder.h"

using remat::test::run_remat;

namespace {

// The loss `remat train` reports at step `step` of `steps` ("step S/N  loss X ...").
double loss_at(const std::string& out, int step, int steps) {
  const auto at = out.find("step " + std::to_string(step) + "/" + std::to_string(steps) + " ");
  REQUIRE(at != std::string::npos);
  return std::stod(out.substr(out.find("loss ", at) + 5));
}

// The whole line of `out` that starts with `prefix` ("" when none does).
std::string line_of(const std::string& out, const std::string& prefix) {
  const auto at = out.rfind("\n" + prefix);
  if (at == std::string::npos) return "";
  return out.substr(at + 1, out.find('\n', at + 1) - at - 1);
}

// The first and last loss of a run's "done     N steps: loss A -> B" line.
std::pair<double, double> done_losses(const std::string& out) {
  const std::string done = line_of(out, "done ");
  REQUIRE(!done.empty());
  const auto at = done.find("loss ") + 5;
  return {std::stod(done.substr(at)), std::stod(done.substr(done.find("-> ", at) + 3))};
}

}  // namespace

TEST_CASE("remat trains qwen3.5-tiny, and generates from what it saved") {
  remat::test::TempFolder d("qwen35_cli");
  // 261 ids: the tiny tokenizer's bytes and merges.
  const auto train = run_remat(
      "train qwen3.5-tiny --vocab 261 --data /usr/share/common-licenses/GPL-3 --batch 2 --seq 32 "
      "--steps 20 --lr 1e-3 --save " +
      d.quoted("w.safetensors"));
  INFO(train.err);
  REQUIRE(train.exit_code == 0);
  CHECK(loss_at(train.out, 20, 20) < loss_at(train.out, 1, 20) - 0.5);
  remat::test::write_tiny_tokenizer(d.path() / "tok");
  const std::string gen = "generate --init " + d.quoted("w.safetensors") + " --tokenizer " +
                          d.quoted("tok") + " --prompt 'hello' --tokens 6 --seed 3 ";
  const auto a = run_remat(gen);
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  CHECK(a.out.rfind("hello", 0) == 0);
  CHECK(a.out.size() > std::string("hello\n").size());
  CHECK(run_remat(gen).out == a.out);  // deterministic for a seed
}

// --delta-chunk chooses how the recurrence is cut (auto: as remat plan chooses); every length
// trains the same bits, so the same losses print.
TEST_CASE("remat train --delta-chunk cuts Qwen3.5's recurrence without changing the losses") {
  const std::string run =
      "train qwen3.5-tiny --data /usr/share/common-licenses/GPL-3 --batch 2 --seq 160 --steps 3 ";
  const auto whole = run_remat(run + "--delta-chunk 0");
  const auto blocks = run_remat(run + "--delta-chunk 64");
  INFO(whole.err << blocks.err);
  REQUIRE(whole.exit_code == 0);
  REQUIRE(blocks.exit_code == 0);
  CHECK(whole.out.find("delta    rule in one chunk of the whole sequence") != std::string::npos);
  CHECK(blocks.out.find("delta    rule in chunks of 64 tokens") != std::string::npos);
  for (int step = 1; step <= 3; ++step)
    CHECK(loss_at(blocks.out, step, 3) == loss_at(whole.out, step, 3));
  // The chunkwise kernels' blocks sit at multiples of 64 tokens: another length is refused in
  // one line.
  const auto odd = run_remat(run + "--delta-chunk 100");
  CHECK(odd.exit_code == 2);
  CHECK(odd.err ==
        "remat: error: --delta-chunk must be a multiple of 64 tokens (the chunkwise delta rule's "
        "block) or 0 for the whole sequence, got 100\n");
  // One chunk longer than llvmpipe (every device the tests run on) runs in one chunkwise call at
  // the tiny preset's heads, 1,664 steps, is refused in one line before any step; auto never
  // chooses one.
  const auto too_long = run_remat(
      "train qwen3.5-tiny --ctx 2048 --seq 2048 --batch 1 --steps 1 --delta-chunk 0 --data "
      "/usr/share/common-licenses/GPL-3");
  CHECK(too_long.exit_code == 2);
  CHECK(too_long.err.find("a chunk of 2048 steps, but this device runs at most 1664 in one "
                          "call; use --delta-chunk 1664 or less") != std::string::npos);
  const auto llama = run_remat(
      "train llama-tiny --data /usr/share/common-licenses/GPL-3 --steps 1 --delta-chunk 8");
  CHECK(llama.exit_code == 2);
  CHECK(llama.err.find("--delta-chunk is for Qwen3.5 models") != std::string::npos);
}

// A preference run's session is the SFT session of its rows (2 a pair or a KTO example): the same
// --delta-chunk auto choice, so the same chunk, at the same rows, seq and plan. Under every:1 the
// tiny preset's states are recomputed with their block, and 64 of T 160 plans the smallest arena
// (a preference run that skipped the choice ran one chunk of the whole sequence).
TEST_CASE("remat train --objective dpo and kto on Qwen3.5 cut the delta rule as SFT does") {
  remat::test::TempFolder d("qwen35_pref_cli");
  remat::test::write_tiny_tokenizer(d.path() / "tok");
  const std::string run = "train qwen3.5-tiny --vocab 261 --tokenizer " + d.quoted("tok") +
                          " --seq 160 --policy every:1 --lora 4 --lr 3e-3 ";
  const auto sft = run_remat(run + "--batch 4 --steps 1 --data /usr/share/common-licenses/GPL-3");
  INFO(sft.err);
  REQUIRE(sft.exit_code == 0);
  const std::string delta = line_of(sft.out, "delta    ");
  CHECK(delta.find("delta    rule in chunks of 64 tokens (") == 0);
  const std::string data = std::string(REMAT_SOURCE_DIR) + "/samples/data/";
  for (const auto& [objective, file] :
       {std::pair<std::string, std::string>{"dpo", "preference.jsonl"},
        {"kto", "feedback.jsonl"}}) {
    const auto pref =
        run_remat(run + "--objective " + objective + " --batch 2 --steps 8 --data " + data + file);
    INFO(objective << "\n" << pref.out << pref.err);
    REQUIRE(pref.exit_code == 0);
    CHECK(line_of(pref.out, "delta    ") == delta);
    const auto [first, last] = done_losses(pref.out);
    CHECK(std::isfinite(last));
    CHECK(last < first);
  }
}

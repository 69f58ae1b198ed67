// Qwen3.5 from the command line: remat plan plans it, choosing the delta rule's chunk length
// within one binding, or taking the one given, from a preset or a checkpoint (a Hugging Face
// folder or a qwen35 GGUF file).
#include <catch2/catch.hpp>

#include <string>

#include "tests/support/qwen35_files.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_folder.h"

using remat::test::run_remat;

TEST_CASE("remat plan plans Qwen3.5 and reports the delta rule's chunk states") {
  // B 4, T 512: one state is 4 MiB, so a 128 MiB binding holds the workspace of 32 tokens at
  // most; 32 keeps fewer states (15 a layer, 18 layers) than 16 does.
  const auto r = run_remat("plan qwen3.5-0.8b --batch 4 --seq 512");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("delta rule in chunks of 32 tokens: chunk-start states 1.05 GiB over 18 "
                   "layers, 0 recomputed") != std::string::npos);
  const auto every = run_remat(
      "plan qwen3.5-0.8b --batch 4 --seq 512 --delta-chunk 16 "
      "--policy every:1 --json");
  INFO(every.err);
  REQUIRE(every.exit_code == 0);
  CHECK(every.out.find("\"chunk\": 16") != std::string::npos);
  CHECK(every.out.find("\"recomputed_layers\": 18") != std::string::npos);
  const auto bad = run_remat("plan qwen3.5-0.8b --delta-chunk -1");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--delta-chunk") != std::string::npos);
  const auto llama = run_remat("plan llama-tiny --delta-chunk 16");
  CHECK(llama.exit_code == 2);
  CHECK(llama.err.find("--delta-chunk is for Qwen3.5 models") != std::string::npos);
}

TEST_CASE("remat plan reads a Qwen3.5 folder or GGUF file") {
  remat::test::TempFolder d("qwen35_plan_cli_files");
  const remat::ModelConfig m = remat::test::tiny_qwen35();
  const remat::test::Qwen35Weights w = remat::test::qwen35_weights(m, 1);
  remat::test::write_qwen35_gguf(d / "tiny.gguf", m, w, remat::test::qwen35_mtp_tensors(m, 1));
  remat::test::write_qwen35_folder(d / "tiny", m, w, {}, true);
  for (const std::string file : {"tiny.gguf", "tiny"}) {
    INFO(file);
    const auto plan = run_remat("plan --init " + (d / file).string() + " --batch 1 --seq 16");
    INFO(plan.err);
    CHECK(plan.exit_code == 0);
    CHECK(plan.out.find("delta rule") != std::string::npos);
  }
}

// Qwen3.5 from the command line: remat plan plans it, choosing the delta rule's chunk length
// within one binding, or taking the one given.
#include <catch2/catch.hpp>

#include <string>

#include "tests/support/run_command.h"

using remat::test::run_remat;

TEST_CASE("remat plan plans Qwen3.5 and reports the delta rule's chunk states") {
  // B 4, T 512: one state is 4 MiB, and the backward's workspace parts for 256 tokens (its
  // partial sums, 151 MiB) pass a 128 MiB binding, those for 128 fit (graph/
  // delta_rule_workspace.h); 128 plans the smallest arena (3 states a layer, 18 layers).
  const auto r = run_remat("plan qwen3.5-0.8b --batch 4 --seq 512");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("delta rule in chunks of 128 tokens: chunk-start states 216.00 MiB over 18 "
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

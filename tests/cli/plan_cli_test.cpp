// `remat plan` as a user runs it: JSON fields, the policy table, --arena vs --policy, and the
// error contract (one line "remat: error: ...", exit status 2).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "base/json.h"
#include "planner/plan.h"
#include "tests/support/json_number.h"
#include "tests/support/run_command.h"

using remat::test::json_number;
using remat::test::run_remat;

TEST_CASE("remat plan --json has the documented fields") {
  auto r = run_remat("plan --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* key :
       {"\"policy\": \"none\"", "\"arena_bytes\": ", "\"arena_lower_bound_bytes\": ",
        "\"persistent_bytes\": ", "\"checkpoints\": [",
        "\"forward_flops\": ", "\"backward_flops\": ", "\"recompute_flops\": 0",
        "\"predicted_step_ratio\": 1", "\"budget_bytes\": null", "\"analytic\": {",
        "\"M_a\": ", "\"T_c_ratio\": ", "\"interval\": ", "\"batch\": 4", "\"seq\": 64"})
    CHECK(r.out.find(key) != std::string::npos);
  CHECK(json_number(r.out, "arena_bytes") >= json_number(r.out, "arena_lower_bound_bytes"));
  CHECK(r.out.rfind("{", 0) == 0);
}

// Byte and FLOP counts are exact integers far above 2^24; the JSON must carry them without
// rounding (no %g), so a reader gets the planner's numbers bit for bit.
TEST_CASE("remat plan --json prints byte and FLOP counts exactly") {
  const std::string shape = "--layers 32 --dim 4096 --heads 32 --ctx 1024 --seq 1024 --batch 2";
  auto r = run_remat("plan " + shape + " --dtype bf16 --policy every:4 --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("\"M_a\": 1073741824,") != std::string::npos);
  const remat::JsonValue doc = remat::parse_json(r.out);
  remat::ModelConfig model;
  model.layers = 32, model.dim = 4096, model.heads = 32, model.ctx = 1024;
  remat::TrainShape train;
  train.batch = 2, train.seq = 1024, train.activation_dtype = remat::DType::bf16;
  // Without a device, remat plan lays the buffers out in lavapipe's 2 GiB allocations.
  const remat::Plan p =
      remat::plan(model, train, remat::Policy::parse("every:4"), std::nullopt, 256, nullptr, {},
                  {remat::kDevicelessAllocationLimit, remat::kSmallestAllocationCount});
  CHECK(doc.find("analytic")->find("M_a")->number == 1073741824.0);
  CHECK(doc.find("forward_flops")->number == p.report.forward_flops);
  CHECK(doc.find("backward_flops")->number == p.report.backward_flops);
  CHECK(doc.find("recompute_flops")->number == p.report.recompute_flops);
  CHECK(doc.find("arena_bytes")->number == static_cast<double>(p.arena_bytes));
  CHECK(doc.find("persistent_bytes")->number == static_cast<double>(p.persistent_bytes));
  CHECK(r.out.find("e+") == std::string::npos);
}

TEST_CASE("remat plan names the preset a shape equals, or custom, and the activation dtype") {
  auto custom = run_remat("plan --layers 32 --dim 4096 --heads 32 --ctx 1024 --seq 128 --json");
  REQUIRE(custom.exit_code == 0);
  const remat::JsonValue c = remat::parse_json(custom.out);
  CHECK(c.find("model")->find("name")->string == "custom");
  CHECK(c.find("dtype")->string == "f32");
  auto overridden = run_remat("plan gpt2 --layers 4 --seq 64 --json");
  REQUIRE(overridden.exit_code == 0);
  CHECK(remat::parse_json(overridden.out).find("model")->find("name")->string == "custom");
  auto spelled =
      run_remat("plan --layers 12 --dim 768 --heads 12 --vocab 50257 --ctx 1024 --seq 64 --json");
  REQUIRE(spelled.exit_code == 0);
  CHECK(remat::parse_json(spelled.out).find("model")->find("name")->string == "gpt2");

  auto half = run_remat("plan --act-dtype bf16 --json");
  REQUIRE(half.exit_code == 0);
  CHECK(remat::parse_json(half.out).find("dtype")->string == "bf16");
  auto alias = run_remat("plan --dtype f16");  // --dtype: the older spelling
  REQUIRE(alias.exit_code == 0);
  CHECK(alias.out.find("activations f16") != std::string::npos);
}

TEST_CASE("remat plan --arena picks auto within the budget, below the minimum names it") {
  auto none = run_remat("plan gpt2 --layers 4 --vocab 512 --seq 256 --batch 2 --json");
  REQUIRE(none.exit_code == 0);
  const double full = json_number(none.out, "arena_bytes");
  const auto budget = static_cast<unsigned long long>(full * 0.6);
  auto r = run_remat("plan gpt2 --layers 4 --vocab 512 --seq 256 --batch 2 --json --arena " +
                     std::to_string(budget));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("\"policy\": \"auto\"") != std::string::npos);
  CHECK(json_number(r.out, "budget_bytes") == static_cast<double>(budget));
  CHECK(json_number(r.out, "arena_bytes") <= static_cast<double>(budget));
  CHECK(json_number(r.out, "recompute_flops") > 0);
  CHECK(json_number(r.out, "predicted_step_ratio") > 1);
  auto small = run_remat("plan gpt2 --layers 4 --vocab 512 --seq 256 --batch 2 --arena 1MiB");
  CHECK(small.exit_code == 2);
  CHECK(small.err.rfind("remat: error: ", 0) == 0);
  CHECK(small.err.find("minimum is ") != std::string::npos);
  CHECK(small.out.empty());
}

TEST_CASE("remat plan --loss-chunk holds one chunk of logits, auto the largest that fits") {
  const std::string shape = "plan gpt2 --layers 2 --batch 4 --seq 64 --json";
  auto whole = run_remat(shape + " --policy every:1");
  auto chunked = run_remat(shape + " --policy every:1 --loss-chunk 64");
  INFO(whole.err << chunked.err);
  REQUIRE(whole.exit_code == 0);
  REQUIRE(chunked.exit_code == 0);
  CHECK(json_number(whole.out, "loss_chunk") == 0);
  CHECK(json_number(chunked.out, "loss_chunk") == 64);
  // The whole logits and their gradient (2 x 256 x 50257 floats) against one chunk of 64 rows.
  CHECK(json_number(chunked.out, "arena_bytes") + 256.0 * 50257 * 4 <
        json_number(whole.out, "arena_bytes"));
  const double budget = json_number(chunked.out, "arena_bytes");
  auto picked = run_remat(shape + " --loss-chunk auto --arena " +
                          std::to_string(static_cast<unsigned long long>(budget)));
  INFO(picked.err);
  REQUIRE(picked.exit_code == 0);
  CHECK(json_number(picked.out, "loss_chunk") >= 64);
  CHECK(json_number(picked.out, "arena_bytes") <= budget);
  auto text = run_remat("plan gpt2 --layers 2 --batch 4 --seq 64 --loss-chunk 128");
  CHECK(text.out.find("loss in chunks of 128 rows") != std::string::npos);
}

TEST_CASE("remat plan chunks logits one binding cannot hold unless a chunk is given") {
  // [1024, 50257] f32 logits, 205.9 MB: above the 128 MiB binding a plan without a device
  // assumes, which holds 640 rows. --loss-chunk auto and no flag choose alike; 0 keeps them.
  const std::string shape = "plan tiny --vocab 50257 --ctx 256 --batch 4 --seq 256 --json";
  const auto chosen = run_remat(shape);
  const auto asked = run_remat(shape + " --loss-chunk auto");
  const auto whole = run_remat(shape + " --loss-chunk 0");
  INFO(chosen.err << asked.err << whole.err);
  REQUIRE(chosen.exit_code == 0);
  REQUIRE(asked.exit_code == 0);
  REQUIRE(whole.exit_code == 0);
  CHECK(json_number(chosen.out, "loss_chunk") == 640);
  CHECK(json_number(asked.out, "loss_chunk") == 640);
  CHECK(json_number(whole.out, "loss_chunk") == 0);
  CHECK(json_number(chosen.out, "arena_bytes") < json_number(whole.out, "arena_bytes"));
  // Logits that bind stay whole: B = 4, T = 64.
  const auto small = run_remat("plan tiny --vocab 50257 --batch 4 --seq 64 --json");
  REQUIRE(small.exit_code == 0);
  CHECK(json_number(small.out, "loss_chunk") == 0);
}

TEST_CASE("remat plan --lora --loss-chunk: a frozen head, auto chosen for the LoRA graph") {
  const std::string shape = "plan gpt2 --layers 2 --batch 4 --seq 64 --lora 8";
  auto whole = run_remat(shape + " --policy every:1 --json");
  auto chunked = run_remat(shape + " --policy every:1 --loss-chunk 64 --json");
  INFO(whole.err << chunked.err);
  REQUIRE(whole.exit_code == 0);
  REQUIRE(chunked.exit_code == 0);
  CHECK(json_number(chunked.out, "persistent_bytes") == json_number(whole.out, "persistent_bytes"));
  CHECK(json_number(chunked.out, "arena_bytes") + 256.0 * 50257 * 4 <
        json_number(whole.out, "arena_bytes"));
  // With c_attn alone adapted, the smallest LoRA plan with 64-row chunks is below full
  // fine-tuning's: auto must plan the LoRA graph to find that it fits.
  const std::string attn = shape + " --lora-targets c_attn";
  auto lora_min = run_remat(attn + " --loss-chunk 64 --arena 1");
  auto full_min = run_remat("plan gpt2 --layers 2 --batch 4 --seq 64 --loss-chunk 64 --arena 1");
  const auto minimum = [](const std::string& err) {
    const auto at = err.find("minimum is ");
    REQUIRE(at != std::string::npos);
    return std::stoull(err.substr(at + 11));
  };
  const unsigned long long budget = minimum(lora_min.err);
  REQUIRE(budget < minimum(full_min.err));
  auto picked =
      run_remat(attn + " --loss-chunk auto --arena " + std::to_string(budget) + " --json");
  INFO(picked.err);
  REQUIRE(picked.exit_code == 0);
  CHECK(json_number(picked.out, "loss_chunk") == 64);
  CHECK(json_number(picked.out, "arena_bytes") <= double(budget));
}

TEST_CASE("remat plan prints the chosen plan and the policy table") {
  auto r = run_remat("plan tiny --policy every:2");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("policy every:2") != std::string::npos);
  for (const char* row : {"\nnone ", "\nevery:1 ", "\nevery:2 ", "\nevery:4 ", "\nevery:8 ",
                          "\nsqrt ", "\nselective "})
    CHECK(r.out.find(row) != std::string::npos);
  CHECK(r.out.find("\nauto ") == std::string::npos);  // no budget, no auto row
  CHECK(r.out.find("textbook") != std::string::npos);
  auto with_auto = run_remat("plan tiny --arena 8MiB");
  REQUIRE(with_auto.exit_code == 0);
  CHECK(with_auto.out.find("\nauto ") != std::string::npos);
}

TEST_CASE("remat plan rejects bad input with one line and status 2") {
  for (const char* args :
       {"plan --arena 1MiB --policy none", "plan --policy every:0", "plan --policy fancy",
        "plan --seq 65", "plan --heads 3", "plan --model gpt5", "plan --dtype f8",
        "plan --arena lots", "plan --policy auto", "plan tiny --model tiny",
        "plan --costs /nonexistent.json", "plan --batch 0", "plan --loss-chunk 32",
        "plan --loss-chunk -64", "plan --loss-chunk many", "plan --loss-chunk auto --arena 1KiB"}) {
    INFO("remat " << args);
    auto r = run_remat(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("remat: error: ", 0) == 0);
    CHECK(r.err.find('\n') == r.err.size() - 1);
    CHECK(r.out.empty());
  }
}

TEST_CASE("remat plan reads a measured cost table") {
  const std::string path = std::string(REMAT_SOURCE_DIR) + "/build-plan-cli-costs.json";
  std::FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs(
      R"({"default": {"flops_per_s": 1e12}, "kernels": {"attention": {"flops_per_s": 1e9}}})", f);
  std::fclose(f);
  auto slow = run_remat("plan tiny --policy every:1 --json --costs '" + path + "'");
  auto fast = run_remat("plan tiny --policy every:1 --json");
  std::remove(path.c_str());
  REQUIRE(slow.exit_code == 0);
  REQUIRE(fast.exit_code == 0);
  // A slow attention kernel makes recomputing it cost more of the step.
  CHECK(json_number(slow.out, "predicted_step_ratio") !=
        json_number(fast.out, "predicted_step_ratio"));
}

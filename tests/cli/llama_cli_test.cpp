// The Llama family from the command line: plans at a real size, trains, saves and starts again
// from its saved weights, with the model named or read from the file's metadata, and refuses what
// the family cannot do, each with one line and exit 2.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "formats/safetensors.h"
#include "tests/support/run_command.h"

using remat::test::run_remat;
namespace fs = std::filesystem;

namespace {

struct Folder {
  fs::path dir = fs::temp_directory_path() / ("remat_llama_cli_" + std::to_string(::getpid()));
  Folder() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string text;
    while (text.size() < 4096) text += "grouped-query attention shares keys and values. ";
    std::ofstream(dir / "data.txt", std::ios::binary) << text;
  }
  ~Folder() { fs::remove_all(dir); }
  std::string path(const std::string& name) const { return "'" + (dir / name).string() + "'"; }
};

// A one-layer Llama (2 query heads sharing 1 key/value head) that trains in moments on lavapipe.
const std::string kShape = "--layers 1 --dim 32 --heads 2 --kv-heads 1 --ctx 16 --seq 16 ";
const std::string kSmall = kShape + "--ffn 40 --batch 2 --quiet ";

}  // namespace

TEST_CASE("remat plan prints a Llama model's shape and real numbers") {
  const auto r = run_remat("plan smollm2-135m --seq 256 --batch 4");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("L30 C576 H9 V49152 ctx8192 KV3 FFN1536 tied") != std::string::npos);
  CHECK(r.out.find("selective") != std::string::npos);
  const auto j = run_remat("plan qwen2.5-0.5b --seq 64 --batch 1 --json");
  REQUIRE(j.exit_code == 0);
  CHECK(j.out.find("\"arch\": \"llama\"") != std::string::npos);
  // Overrides reach the model.
  const auto tied = run_remat("plan llama-tiny --tied-head yes --qkv-bias yes --rope-theta 5e5");
  REQUIRE(tied.exit_code == 0);
  CHECK(tied.out.find("KV2 FFN352 tied") != std::string::npos);
}

TEST_CASE("remat train trains a Llama model, saves it and starts again from the file") {
  Folder d;
  const std::string data = "--data " + d.path("data.txt") + " ";
  const auto first = run_remat("train llama-tiny " + kSmall + data + "--steps 2 --save " +
                               d.path("w.safetensors"));
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const auto again = run_remat("train llama-tiny " + kSmall + data + "--steps 1 --init " +
                               d.path("w.safetensors"));
  INFO(again.err);
  CHECK(again.exit_code == 0);
  // Without the model named, the file's metadata (its config.json text) says which it is.
  const auto unnamed = run_remat("train --seq 16 --batch 2 --quiet " + data + "--steps 1 --init " +
                                 d.path("w.safetensors"));
  INFO(unnamed.err);
  CHECK(unnamed.exit_code == 0);
  // A Llama file without that metadata (as transformers writes one) has a shape its tensors
  // alone do not tell: refused, saying what to do.
  const remat::SafetensorsContents saved = remat::read_safetensors(d.dir / "w.safetensors");
  remat::write_safetensors(d.dir / "bare.safetensors", saved.tensors, {{"format", "pt"}});
  const auto bare = run_remat("train " + data + "--init " + d.path("bare.safetensors"));
  CHECK(bare.exit_code == 2);
  CHECK(bare.err.find("Llama-family checkpoint") != std::string::npos);
  // Another shape is refused by tensor name and shape.
  const auto other = run_remat("train llama-tiny " + kShape + "--ffn 48 " + data +
                               "--steps 1 --init " + d.path("w.safetensors"));
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("mlp.gate_proj.weight' has shape") != std::string::npos);
}

TEST_CASE("Llama-only flags and dropout are refused with one line") {
  Folder d;
  const std::string data = "--data " + d.path("data.txt") + " ";
  const auto kv = run_remat("plan tiny --kv-heads 2");
  CHECK(kv.exit_code == 2);
  CHECK(kv.err.find("Llama-family") != std::string::npos);
  const auto bias = run_remat("plan llama-tiny --qkv-bias maybe");
  CHECK(bias.exit_code == 2);
  CHECK(bias.err.find("yes or no") != std::string::npos);
  const auto dropout = run_remat("train llama-tiny " + kSmall + data + "--dropout 0.1");
  CHECK(dropout.exit_code == 2);
  CHECK(dropout.err.find("no dropout") != std::string::npos);
}

TEST_CASE("Llama 3.2 and Qwen3 presets plan, LoRA on a bf16 base included") {
  const auto qwen3 = run_remat("plan qwen3-0.6b --lora 8 --weights-dtype bf16 --batch 1 --seq 512");
  INFO(qwen3.err);
  CHECK(qwen3.exit_code == 0);
  CHECK(qwen3.out.find("qwen3-0.6b") != std::string::npos);
  CHECK(qwen3.out.find("head_dim128 qk-norm") != std::string::npos);
  const auto llama = run_remat("plan llama3.2-3b --batch 1 --seq 256");
  CHECK(llama.exit_code == 0);
  CHECK(llama.out.find("llama3-rope") != std::string::npos);
}

// Planning needs no kernel: at T 1024 the local layers' 512-key window is in the plan.
TEST_CASE("Gemma 3 presets plan, LoRA on a bf16 base included") {
  const auto small = run_remat("plan gemma3-270m --batch 1 --seq 1024");
  INFO(small.err);
  CHECK(small.exit_code == 0);
  CHECK(small.out.find("gemma3-270m") != std::string::npos);
  CHECK(small.out.find("gemma3 window512 global-every6") != std::string::npos);
  const auto big = run_remat("plan gemma3-1b --lora 8 --weights-dtype bf16 --batch 1 --seq 512");
  INFO(big.err);
  CHECK(big.exit_code == 0);
  CHECK(big.out.find("gemma3-1b") != std::string::npos);
}

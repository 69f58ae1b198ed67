// GGUF models from the command line: `plan` and `train --init M.gguf` read the model from the file;
// a quantized model fine-tunes with --lora and is refused, with the fix, without it.
#include <catch2/catch.hpp>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "graph/model_builder.h"
#include "tests/support/gguf_model_files.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_folder.h"

using namespace remat;
using remat::test::run_remat;

namespace {

// A two-layer Llama whose rows are whole q8_0 blocks.
ModelConfig gguf_llama() {
  return test::block_llama_model(256, 32, ModelConfig::preset("llama-tiny").tied_head);
}

void write_model(const std::filesystem::path& path, GgmlType type) {
  const ModelConfig m = gguf_llama();
  const Graph g = build_model(m, TrainShape{1, 8});
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<test::GgufParam> params;
  for (TensorId id : g.parameters) {
    const Tensor& t = g.tensors.at(static_cast<std::size_t>(id));
    test::GgufParam p{t.name, t.shape, std::vector<float>(static_cast<std::size_t>(t.elements()))};
    for (float& v : p.values) v = t.shape.size() == 1 ? 1.0f : normal(rng);
    params.push_back(std::move(p));
  }
  test::write_gguf_model(path, params, m, GgufArch::llama, type);
}

std::string quoted(const std::filesystem::path& p) {
  return "'" + p.string() + "'";
}

}  // namespace

TEST_CASE("remat plan and train read a GGUF model's shape and weights") {
  test::TempFolder d("gguf_cli");
  write_model(d / "m.gguf", GgmlType::f32);
  const auto plan = run_remat("plan --init " + quoted(d / "m.gguf") + " --batch 2 --seq 16");
  INFO(plan.err);
  REQUIRE(plan.exit_code == 0);
  CHECK(plan.out.find("L2 C64") != std::string::npos);
  const auto train = run_remat("train --init " + quoted(d / "m.gguf") +
                               " --data /usr/share/common-licenses/GPL-3 --batch 2 --seq 16 "
                               "--steps 2 --quiet");
  INFO(train.err);
  CHECK(train.exit_code == 0);
  CHECK(train.out.find("done     2 steps") != std::string::npos);
}

TEST_CASE("a quantized GGUF model trains with --lora and is refused without it") {
  test::TempFolder d("gguf_cli_q8");
  write_model(d / "q8.gguf", GgmlType::q8_0);
  const std::string common = "train --init " + quoted(d / "q8.gguf") +
                             " --data /usr/share/common-licenses/GPL-3 --batch 2 --seq 16 "
                             "--steps 2 --quiet";
  const auto full = run_remat(common);
  CHECK(full.exit_code == 2);
  CHECK(full.err.find("remat: error: ") == 0);
  CHECK(full.err.find("tensor 'token_embd.weight' is q8_0") != std::string::npos);
  CHECK(full.err.find("add --lora R") != std::string::npos);
  const auto lora = run_remat(common + " --lora 4");
  INFO(lora.err);
  CHECK(lora.exit_code == 0);
  CHECK(lora.out.find("done     2 steps") != std::string::npos);
  // A damaged file is one line, exit 2.
  { std::ofstream(d / "bad.gguf", std::ios::binary) << "GGUF\x03"; }
  const auto bad = run_remat("train --init " + quoted(d / "bad.gguf") +
                             " --data /usr/share/common-licenses/GPL-3 --lora 4");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("bad.gguf") != std::string::npos);
  CHECK(bad.err.find('\n') == bad.err.size() - 1);
}

TEST_CASE("remat plan keeps a quantized GGUF base in its blocks under --lora unless told no") {
  test::TempFolder d("gguf_cli_base_blocks");
  write_model(d / "q8.gguf", GgmlType::q8_0);
  const std::string common = "plan --init " + quoted(d / "q8.gguf") + " --batch 2 --seq 16";
  const auto kept = run_remat(common + " --lora 4");
  INFO(kept.err);
  REQUIRE(kept.exit_code == 0);
  CHECK(kept.out.find("2-D weights in the file's blocks") != std::string::npos);
  const auto decoded = run_remat(common + " --lora 4 --base-blocks no");
  INFO(decoded.err);
  REQUIRE(decoded.exit_code == 0);
  CHECK(decoded.out.find("in the file's blocks") == std::string::npos);
  CHECK(decoded.out.find("2-D weights f32") != std::string::npos);
  // The flag is a choice only for LoRA on a .gguf file, and takes yes or no.
  for (const auto& [args, message] :
       {std::pair<std::string, std::string>{common + " --base-blocks yes",
                                            "--base-blocks is for --lora on a .gguf --init"},
        {"plan tiny --lora 4 --base-blocks no", "--base-blocks is for --lora on a .gguf --init"},
        {common + " --lora 4 --base-blocks maybe", "--base-blocks takes yes or no, not 'maybe'"}}) {
    const auto r = run_remat(args);
    INFO(args << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err == "remat: error: " + message + "\n");
  }
}

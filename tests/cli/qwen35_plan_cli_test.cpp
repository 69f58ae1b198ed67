// Qwen3.5 from the command line: remat plan plans it, choosing the delta rule's chunk length
// within one binding, or taking the one given, from a preset or a checkpoint (a Hugging Face
// folder or a qwen35 GGUF file); remat train trains from such a checkpoint and saves it back with
// what it held besides the parameters, and refuses before a step a save that could not hold it.
#include <catch2/catch.hpp>

#include <string>

#include "tests/support/qwen35_files.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_folder.h"

using remat::test::run_remat;

TEST_CASE("remat plan plans Qwen3.5 and reports the delta rule's chunk states") {
  // B 4, T 512: one state is 4 MiB, and the chunkwise backward's kept block values for 512 tokens
  // (136.6 MiB) pass a 128 MiB binding, those for 256 fit (graph/delta_rule_workspace.h); 256
  // plans the smallest arena (1 state a layer, 18 layers).
  const auto r = run_remat("plan qwen3.5-0.8b --batch 4 --seq 512");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("delta rule in chunks of 256 tokens: chunk-start states 72.00 MiB over 18 "
                   "layers, 0 recomputed") != std::string::npos);
  const auto every = run_remat(
      "plan qwen3.5-0.8b --batch 4 --seq 512 --delta-chunk 64 "
      "--policy every:1 --json");
  INFO(every.err);
  REQUIRE(every.exit_code == 0);
  CHECK(every.out.find("\"chunk\": 64") != std::string::npos);
  CHECK(every.out.find("\"recomputed_layers\": 18") != std::string::npos);
  const auto bad = run_remat("plan qwen3.5-0.8b --delta-chunk -1");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--delta-chunk") != std::string::npos);
  // The chunkwise delta rule's blocks sit at multiples of 64 tokens.
  const auto odd = run_remat("plan qwen3.5-0.8b --batch 4 --seq 512 --delta-chunk 16");
  CHECK(odd.exit_code == 2);
  CHECK(odd.err ==
        "remat: error: --delta-chunk must be a multiple of 64 tokens (the chunkwise delta rule's "
        "block) or 0 for the whole sequence, got 16\n");
  const auto llama = run_remat("plan llama-tiny --delta-chunk 16");
  CHECK(llama.exit_code == 2);
  CHECK(llama.err.find("--delta-chunk is for Qwen3.5 models") != std::string::npos);
}

TEST_CASE("remat plans and trains a Qwen3.5 folder or GGUF file and saves what it held") {
  remat::test::TempFolder d("qwen35_plan_cli_files");
  remat::ModelConfig m = remat::test::tiny_qwen35();
  m.vocab = 256;  // byte-level data
  const remat::test::Qwen35Weights w = remat::test::qwen35_weights(m, 1);
  const auto mtp = remat::test::qwen35_mtp_tensors(m, 1);
  remat::test::write_qwen35_gguf(d / "tiny.gguf", m, w, mtp);  // no tokenizer: bytes are ids
  remat::test::write_qwen35_folder(d / "tiny", m, w, mtp, true);
  const std::string data = " --data /usr/share/common-licenses/GPL-3";
  for (const std::string file : {"tiny.gguf", "tiny"}) {
    INFO(file);
    const auto plan = run_remat("plan --init " + (d / file).string() + " --batch 1 --seq 16");
    INFO(plan.err);
    CHECK(plan.exit_code == 0);
    CHECK(plan.out.find("delta rule") != std::string::npos);
  }
  const auto folder = run_remat("train --init " + (d / "tiny").string() + data +
                                " --batch 1 --seq 16 --steps 2 --save " + (d / "out").string());
  INFO(folder.err);
  REQUIRE(folder.exit_code == 0);
  const auto in =
      remat::test::text_names(remat::test::safetensors_raw(d / "tiny" / "model.safetensors"));
  const auto out = remat::test::safetensors_raw(d / "out" / "model.safetensors");
  CHECK(out.size() == in.size());
  for (const auto& t : mtp) CHECK(out.at(t.name) == in.at(t.name));  // passed through
  CHECK(std::get<0>(out.at("model.layers.0.linear_attn.in_proj_qkv.weight")) == "BF16");
  const auto gguf = run_remat("train --init " + (d / "tiny.gguf").string() + data +
                              " --batch 1 --seq 16 --steps 2 --save-dtype bf16 --save " +
                              (d / "out.gguf").string());
  INFO(gguf.err);
  REQUIRE(gguf.exit_code == 0);
  const auto gin = remat::test::gguf_raw(d / "tiny.gguf");
  const auto gout = remat::test::gguf_raw(d / "out.gguf");
  CHECK(gout.size() == gin.size());
  CHECK(gout.at("blk.4.nextn.eh_proj.weight") == gin.at("blk.4.nextn.eh_proj.weight"));
  CHECK(gout.at("token_embd.weight") != gin.at("token_embd.weight"));  // trained
}

// Value heads of 8 beside key heads of 16: the file's inner_size says so beside its state_size
// (formats/gguf_qwen35.cpp). remat trains from it and saves a file that it trains from again.
TEST_CASE("remat trains a qwen35 GGUF file whose value heads differ from its key heads") {
  remat::test::TempFolder d("qwen35_plan_cli_dv");
  remat::ModelConfig m = remat::test::tiny_qwen35();
  m.vocab = 256;
  m.qwen35_layers.linear_value_head_dim = 8;
  m.validate();
  remat::test::write_qwen35_gguf(d / "in.gguf", m, remat::test::qwen35_weights(m, 2),
                                 remat::test::qwen35_mtp_tensors(m, 2));
  const std::string run =
      " --data /usr/share/common-licenses/GPL-3 --batch 2 --seq 16 --lr 1e-3 --steps ";
  const auto first = run_remat("train --init " + (d / "in.gguf").string() + run + "8 --save " +
                               (d / "out.gguf").string());
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.out.find("delta    rule in ") != std::string::npos);
  CHECK(first.out.find("done     8 steps: loss ") != std::string::npos);
  // bytes: the saved file names no tokenizer (tokenizer.ggml.model "none").
  const auto again =
      run_remat("train --init " + (d / "out.gguf").string() + run + "1 --data-format bytes");
  INFO(again.err);
  CHECK(again.exit_code == 0);
  CHECK(remat::GgufFile::open(d / "out.gguf").metadata().uint("qwen35.ssm.inner_size") == 32u);
}

// A resumed run loads its --init checkpoint again before the state (train_resume.cpp), so what
// the checkpoint held besides the parameters (formats/qwen35_file_extras.h: each tensor's dtype,
// the MTP layers, a GGUF file's ssm_a bytes for an A_log not trained) is there to save: a run
// stopped at step 2 and resumed to 4 saves the same bytes as one never stopped, full training
// (--save) and LoRA (--merge-out, A_log frozen) alike.
TEST_CASE("remat train --resume on a Qwen3.5 checkpoint saves what a run never stopped saves") {
  remat::test::TempFolder d("qwen35_plan_cli_resume");
  remat::ModelConfig m = remat::test::tiny_qwen35();
  m.vocab = 256;
  const remat::test::Qwen35Weights w = remat::test::qwen35_weights(m, 4);
  const auto mtp = remat::test::qwen35_mtp_tensors(m, 4);
  remat::test::write_qwen35_gguf(d / "tiny.gguf", m, w, mtp, remat::GgufMetadata("none"), true);
  remat::test::write_qwen35_folder(d / "tiny", m, w, mtp, true);
  struct Case {
    std::string init, flags, out;
  };
  for (const Case& c : std::vector<Case>{{"tiny", "--save", "full"},
                                         {"tiny.gguf", "--save", "full.gguf"},
                                         {"tiny.gguf", "--lora 4 --merge-out", "merged.gguf"},
                                         {"tiny", "--lora 4 --merge-out", "merged.safetensors"}}) {
    INFO(c.init << " " << c.flags);
    const std::string run = "train --init " + (d / c.init).string() +
                            " --data /usr/share/common-licenses/GPL-3 --batch 1 --seq 16 "
                            "--steps 4 --lr 1e-3 --quiet " +
                            c.flags + " ";
    const auto whole = run_remat(run + (d / ("whole_" + c.out)).string());
    INFO(whole.err);
    REQUIRE(whole.exit_code == 0);
    const auto stopped =
        run_remat(run + (d / ("unused_" + c.out)).string() + " --stop-at 2 --save-state " +
                  (d / ("state_" + c.out)).string());
    INFO(stopped.err);
    REQUIRE(stopped.exit_code == 0);
    const std::string flag = c.flags.substr(c.flags.rfind(' ') + 1);
    const auto resumed = run_remat("train --resume " + (d / ("state_" + c.out)).string() +
                                   " --quiet " + flag + " " + (d / ("resumed_" + c.out)).string());
    INFO(resumed.err);
    REQUIRE(resumed.exit_code == 0);
    const auto file = [&](const std::string& which) {
      const std::filesystem::path p = d / (which + c.out);
      return std::filesystem::is_directory(p) ? p / "model.safetensors" : p;
    };
    CHECK(remat::test::read_bytes(file("resumed_")) == remat::test::read_bytes(file("whole_")));
  }
}

TEST_CASE("remat train refuses a Qwen3.5 save its MTP layers cannot cross into before a step") {
  remat::test::TempFolder d("qwen35_plan_cli_mtp_refused");
  remat::ModelConfig m = remat::test::tiny_qwen35();
  m.vocab = 256;
  // A second MTP layer that config.json's mtp_num_hidden_layers (1) does not count: llama.cpp
  // would never ask for its block, so no GGUF file holds it; a folder keeps it as read.
  auto mtp = remat::test::qwen35_mtp_tensors(m, 3);
  remat::NamedTensor extra = mtp.back();
  extra.name = "mtp.layers.1.mlp.down_proj.weight";
  mtp.push_back(extra);
  remat::test::write_qwen35_folder(d / "in", m, remat::test::qwen35_weights(m, 3), mtp, false);
  const std::string base = "train --init " + (d / "in").string() +
                           " --data /usr/share/common-licenses/GPL-3 --batch 1 --seq 16 --steps 1";
  const auto r = run_remat(base + " --save " + (d / "out.gguf").string());
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("remat: error: --save " + (d / "out.gguf").string() +
                        ": MTP tensor "
                        "'mtp.layers.1.mlp.down_proj.weight'",
                    0) == 0);
  CHECK(r.err.find('\n') == r.err.size() - 1);
  CHECK(r.out.find("step") == std::string::npos);
  CHECK_FALSE(std::filesystem::exists(d / "out.gguf"));
  const auto folder = run_remat(base + " --save " + (d / "out").string());
  INFO(folder.err);
  CHECK(folder.exit_code == 0);
  CHECK(remat::test::safetensors_raw(d / "out" / "model.safetensors").count(extra.name) == 1);
}

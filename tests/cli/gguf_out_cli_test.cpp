// GGUF out from the command line: `remat train --save M.gguf` (--save-dtype), `--save-adapter
// A.gguf` (--adapter-dtype), `--merge-out M.gguf` and `--lora-init A.gguf`; a model saved from a
// .gguf --init keeps its tokenizer keys; a gemma3 .gguf saves as gemma3; the flags that need a
// .gguf output say so.
#include <catch2/catch.hpp>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/json.h"
#include "formats/gguf.h"
#include "formats/gguf_model.h"
#include "formats/gguf_model_writer.h"
#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "graph/model_builder.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_folder.h"

using namespace remat;
using remat::test::run_remat;

namespace {

// Bytes: the input model carries a tokenizer's keys, not a usable tokenizer, and train would read
// --data with a .gguf --init's tokenizer.
const std::string kData =
    " --data /usr/share/common-licenses/GPL-3 --data-format bytes --batch 2 --seq 16 --quiet";

std::string quoted(const std::filesystem::path& p) {
  return "'" + p.string() + "'";
}

// A small Llama (or Gemma 3) as GGUF with a tokenizer's keys, as a converted model would carry
// them.
ModelConfig input_model(bool gemma3) {
  ModelConfig m = ModelConfig::preset("llama-tiny");
  m.layers = 2;
  m.dim = 64;
  m.ffn = 96;
  m.ctx = 32;
  if (gemma3) {
    m.tied_head = true;
    m.qk_norm = true;
    m.gemma3 = true;
    m.gemma = {4, 2, 10000.0f, 16.0f};
  }
  return m;
}

void write_input_model(const std::filesystem::path& path, bool gemma3 = false) {
  const ModelConfig m = input_model(gemma3);
  const Graph g = build_model(m, TrainShape{1, 8});
  std::vector<GgufSourceTensor> tensors;
  for (TensorId id : g.parameters) {
    const Tensor& t = g.tensors.at(static_cast<std::size_t>(id));
    tensors.push_back({t.name, t.shape});
  }
  GgufModelOptions o;
  o.extra.set("tokenizer.ggml.model", GgufValue::of("gpt2"));
  o.extra.set("tokenizer.ggml.tokens", GgufValue::array(std::vector<std::string>(256, "x")));
  o.extra.set("tokenizer.chat_template", GgufValue::of("{{ messages }}"));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  write_gguf_model(
      path, m, tensors,
      [&](std::size_t i, uint64_t, std::span<float> out) {
        for (float& v : out)
          v = tensors[i].shape.size() == 1 ? (m.gemma3 ? 0.0f : 1.0f) : normal(rng);
      },
      o);
}

// A Hugging Face folder of `config` (config.json's text) and small random weights.
ModelConfig write_hf_folder(const std::filesystem::path& dir, const std::string& config) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << config;
  const ModelConfig m = model_config_from_hf(parse_json(config));
  const Graph g = build_model(m, TrainShape{1, 8});
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<NamedTensor> tensors;
  for (TensorId id : g.parameters) {
    const Tensor& t = g.tensors.at(static_cast<std::size_t>(id));
    std::vector<float> v(static_cast<std::size_t>(t.elements()));
    for (float& x : v) x = t.shape.size() == 1 ? (m.gemma3 ? 0.0f : 1.0f) : normal(rng);
    tensors.push_back({t.name, t.shape, std::move(v)});
  }
  write_safetensors(dir / "model.safetensors", tensors);
  return m;
}

const std::string kSmallLlama =
    R"({"model_type": "llama", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1,
    "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 256,
    "max_position_embeddings": 32, "rope_theta": 100.0, )";

}  // namespace

TEST_CASE("remat train --save M.gguf writes a GGUF model that keeps the input's tokenizer") {
  test::TempFolder d("gguf_out_cli");
  write_input_model(d / "in.gguf");
  const auto r = run_remat("train --init " + quoted(d / "in.gguf") + kData + " --steps 2 --save " +
                           quoted(d / "out.gguf") + " --save-dtype f16");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const GgufFile f = GgufFile::open(d / "out.gguf");
  CHECK(f.metadata().string("general.architecture") == "llama");
  CHECK(f.metadata().uint("general.file_type") == 1u);
  CHECK(f.tensor("blk.0.attn_q.weight")->type == GgmlType::f16);
  CHECK(f.tensor("blk.0.attn_norm.weight")->type == GgmlType::f32);
  CHECK(f.metadata().string("tokenizer.ggml.model") == "gpt2");
  CHECK(f.metadata().string("tokenizer.chat_template") == "{{ messages }}");
  // ... and trains on from there.
  const auto again = run_remat("train --init " + quoted(d / "out.gguf") + kData + " --steps 1");
  INFO(again.err);
  CHECK(again.exit_code == 0);
}

TEST_CASE(
    "remat train --save-adapter A.gguf and --merge-out M.gguf write llama.cpp files that "
    "--lora-init reads") {
  test::TempFolder d("gguf_out_cli_lora");
  write_input_model(d / "in.gguf");
  const std::string base = "train --init " + quoted(d / "in.gguf") + kData + " --steps 2";
  const auto r = run_remat(base + " --lora 4 --lora-targets q_proj,v_proj --save-adapter " +
                           quoted(d / "a.gguf") + " --adapter-dtype f16 --merge-out " +
                           quoted(d / "m.gguf") + " --save-dtype bf16");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const GgufFile a = GgufFile::open(d / "a.gguf");
  CHECK(a.metadata().string("general.type") == "adapter");
  CHECK(a.metadata().number("adapter.lora.alpha") == 8.0);
  CHECK(a.tensors().size() == 2 * 2 * 2);
  CHECK(a.tensor("blk.1.attn_v.weight.lora_b")->type == GgmlType::f16);
  CHECK(GgufFile::open(d / "m.gguf").tensor("blk.0.attn_q.weight")->type == GgmlType::bf16);
  const auto cont = run_remat(base + " --lora-init " + quoted(d / "a.gguf") + " --save-adapter " +
                              quoted(d / "b.gguf"));
  INFO(cont.err);
  CHECK(cont.exit_code == 0);
  CHECK(GgufFile::open(d / "b.gguf").tensors().size() == 8);
  const auto printed = run_remat(base + " --lora 4 --lora-targets v_proj,q_proj --lora-init " +
                                 quoted(d / "a.gguf"));
  INFO(printed.err);
  CHECK(printed.exit_code == 0);
  const auto other = run_remat(base + " --lora 4 --lora-init " + quoted(d / "a.gguf"));
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("--lora-init: ") != std::string::npos);
  CHECK(other.err.find("targets q_proj,v_proj") != std::string::npos);
}

TEST_CASE("a gemma3 .gguf trains from the command line and saves as gemma3 model, adapter, merge") {
  test::TempFolder d("gguf_out_cli_gemma3");
  write_input_model(d / "in.gguf", true);
  const std::string base = "train --init " + quoted(d / "in.gguf") + kData + " --steps 2";
  const auto full = run_remat(base + " --save " + quoted(d / "out.gguf"));
  INFO(full.err);
  REQUIRE(full.exit_code == 0);
  const GgufFile out = GgufFile::open(d / "out.gguf");
  CHECK(out.metadata().string("general.architecture") == "gemma3");
  CHECK(out.metadata().uint("gemma3.attention.sliding_window") == 4u);
  CHECK(gguf_model_config(out) == input_model(true));
  const auto r = run_remat(base + " --lora 4 --save-adapter " + quoted(d / "a.gguf") +
                           " --merge-out " + quoted(d / "m.gguf"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(GgufFile::open(d / "a.gguf").metadata().string("general.architecture") == "gemma3");
  CHECK(GgufFile::open(d / "a.gguf").tensor("blk.1.ffn_down.weight.lora_b") != nullptr);
  CHECK(gguf_model_config(GgufFile::open(d / "m.gguf")) == input_model(true));
}

TEST_CASE("remat train --save-dtype and --adapter-dtype need .gguf outputs and name their values") {
  test::TempFolder d("gguf_out_cli_usage");
  const std::string base = "train llama-tiny" + kData + " --steps 1";
  auto error = [](const std::string& args) {
    const auto r = run_remat(args);
    CHECK(r.exit_code == 2);
    return r.err;
  };
  CHECK(error(base + " --save " + quoted(d / "w.safetensors") + " --save-dtype f16")
            .find("--save-dtype needs --save M.gguf or --merge-out M.gguf") != std::string::npos);
  CHECK(error(base + " --save " + quoted(d / "w.gguf") + " --save-dtype f8")
            .find("--save-dtype must be f32, f16 or bf16, not 'f8'") != std::string::npos);
  CHECK(error(base + " --lora 2 --save-adapter " + quoted(d / "dir") + " --adapter-dtype f16")
            .find("--adapter-dtype needs --save-adapter A.gguf") != std::string::npos);
  CHECK(error(base + " --lora 2 --save " + quoted(d / "w.gguf"))
            .find("--save-adapter DIR (or A.gguf)") != std::string::npos);
}

TEST_CASE("remat train refuses a .gguf output the GGUF writer would refuse before a step runs") {
  test::TempFolder d("gguf_out_cli_refused");
  // Gemma 3 with query_pre_attn_scalar 256 (the default) on heads of 16: llama.cpp would scale
  // its queries by 16^-1/2, so no GGUF file holds it.
  write_hf_folder(d / "gemma",
                  R"({"model_type": "gemma3_text", "hidden_size": 32, "intermediate_size": 48,
      "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "vocab_size": 256,
      "max_position_embeddings": 32})");
  const std::string base = "train --init " + quoted(d / "gemma") + kData + " --steps 1";
  const std::pair<std::string, std::string> outputs[] = {
      {" --save " + quoted(d / "out.gguf"), "--save "},
      {" --lora 2 --merge-out " + quoted(d / "out.gguf"), "--merge-out "},
      {" --lora 2 --save-adapter " + quoted(d / "out.gguf"), "--save-adapter "}};
  for (const auto& [flags, flag] : outputs) {
    const auto r = run_remat(base + flags);
    INFO(flags << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("remat: error: " + flag, 0) == 0);
    CHECK(r.err.find("query_pre_attn_scalar 256") != std::string::npos);
    CHECK(r.err.find('\n') == r.err.size() - 1);
    CHECK(r.out.empty());  // before the device, the plan and any step
    CHECK_FALSE(std::filesystem::exists(d / "out.gguf"));
  }
  // The same model saves as a folder.
  CHECK(run_remat(base + " --save " + quoted(d / "out")).exit_code == 0);
}

TEST_CASE("a Llama 3 folder with llama3 rope_scaling saves as GGUF with rope_freqs") {
  test::TempFolder d("gguf_out_cli_llama3");
  const ModelConfig m = write_hf_folder(
      d / "llama3", kSmallLlama + R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0,
      "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}})");
  REQUIRE(m.rope_scaling == RopeScaling::llama3);
  const auto r = run_remat("train --init " + quoted(d / "llama3") + kData + " --steps 1 --save " +
                           quoted(d / "out.gguf"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const GgufFile f = GgufFile::open(d / "out.gguf");
  REQUIRE(f.tensor("rope_freqs.weight") != nullptr);
  CHECK(gguf_model_config(f) == m);
  // ... and trains on from there.
  CHECK(run_remat("train --init " + quoted(d / "out.gguf") + kData + " --steps 1").exit_code == 0);
}

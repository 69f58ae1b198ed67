// LoRA through the C API: params fields, PEFT's adapter files in and out, llama.cpp's GGUF
// adapters and models for .gguf paths, merged weights, the errors that name what is wrong, a params
// struct from before the LoRA fields, and the frozen base and the activations stored in 16 bits.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "formats/gguf_model.h"
#include "remat/remat.h"
#include "tests/api/api_test_params.h"
#include "tests/support/gguf_model_files.h"

using remat::test::Handles;
using remat::test::pattern_batch;
using remat::test::small_params;

namespace {

remat_session_params lora_params() {
  remat_session_params p = small_params();
  p.lora_rank = 2;
  p.lora_alpha = 3;
  p.lora_targets = "c_attn,mlp.c_fc";
  return p;
}

void train(remat_session* s, int steps) {
  for (int i = 0; i < steps; ++i) {
    const auto b = pattern_batch(16, 64, i);
    float loss = -1;
    REQUIRE(remat_session_step(s, b.tokens.data(), b.targets.data(), b.tokens.size(), &loss) ==
            REMAT_OK);
  }
}

std::string file_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("c api: LoRA sessions save, load and merge PEFT adapters") {
  const auto dir = remat::test::scratch_dir("lora");
  const remat_session_params p = lora_params();
  remat_plan_report full_report{sizeof(remat_plan_report)}, lora_report{sizeof(remat_plan_report)};
  remat_session_params full = small_params();
  REQUIRE(remat_plan(&full, &full_report) == REMAT_OK);
  REQUIRE(remat_plan(&p, &lora_report) == REMAT_OK);
  CHECK(lora_report.persistent_bytes < full_report.persistent_bytes);

  Handles a, b;
  REQUIRE(remat_device_open(nullptr, &a.device) == REMAT_OK);
  REQUIRE(remat_session_create(a.device, &p, &a.session) == REMAT_OK);
  train(a.session, 3);
  const std::string adapter = (dir / "adapter").string();
  REQUIRE(remat_session_save_adapter(a.session, adapter.c_str()) == REMAT_OK);
  CHECK(file_text(dir / "adapter" / "adapter_config.json").find("\"r\": 2") != std::string::npos);
  const std::string merged = (dir / "merged.safetensors").string();
  REQUIRE(remat_session_save_merged(a.session, merged.c_str()) == REMAT_OK);

  // Another LoRA session continues the adapter and saves the same file back.
  REQUIRE(remat_device_open(nullptr, &b.device) == REMAT_OK);
  REQUIRE(remat_session_create(b.device, &p, &b.session) == REMAT_OK);
  REQUIRE(remat_session_load_adapter(b.session, adapter.c_str()) == REMAT_OK);
  const std::string again = (dir / "again").string();
  REQUIRE(remat_session_save_adapter(b.session, again.c_str()) == REMAT_OK);
  CHECK(file_text(dir / "again" / "adapter_model.safetensors") ==
        file_text(dir / "adapter" / "adapter_model.safetensors"));

  // The merged file is a plain checkpoint a full fine-tuning session loads.
  Handles c;
  REQUIRE(remat_device_open(nullptr, &c.device) == REMAT_OK);
  REQUIRE(remat_session_create(c.device, &full, &c.session) == REMAT_OK);
  CHECK(remat_session_load_file(c.session, merged.c_str()) == REMAT_OK);
  CHECK(remat_session_save_adapter(c.session, adapter.c_str()) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("lora_rank") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("c api: .gguf paths save and load llama.cpp adapters and write GGUF models") {
  const auto dir = remat::test::scratch_dir("lora_gguf");
  const remat_session_params p = lora_params();
  Handles a, b, c;
  REQUIRE(remat_device_open(nullptr, &a.device) == REMAT_OK);
  REQUIRE(remat_session_create(a.device, &p, &a.session) == REMAT_OK);
  train(a.session, 3);
  const std::string adapter = (dir / "a.gguf").string();
  REQUIRE(remat_session_save_adapter(a.session, adapter.c_str()) == REMAT_OK);
  CHECK(file_text(dir / "a.gguf").substr(0, 4) == "GGUF");
  CHECK(file_text(dir / "a.gguf").find("blk.0.attn_qkv.weight.lora_a") != std::string::npos);
  const std::string merged = (dir / "m.gguf").string();
  REQUIRE(remat_session_save_merged(a.session, merged.c_str()) == REMAT_OK);
  const std::string base = (dir / "base.gguf").string();
  REQUIRE(remat_session_save_file(a.session, base.c_str()) == REMAT_OK);

  REQUIRE(remat_device_open(nullptr, &b.device) == REMAT_OK);
  REQUIRE(remat_session_create(b.device, &p, &b.session) == REMAT_OK);
  REQUIRE(remat_session_load_adapter(b.session, adapter.c_str()) == REMAT_OK);
  const std::string again = (dir / "again.gguf").string();
  REQUIRE(remat_session_save_adapter(b.session, again.c_str()) == REMAT_OK);
  CHECK(file_text(dir / "again.gguf") == file_text(dir / "a.gguf"));
  const std::string missing = (dir / "missing.gguf").string();
  CHECK(remat_session_load_adapter(b.session, missing.c_str()) == REMAT_ERROR_IO);
  CHECK(remat_session_load_adapter(b.session, merged.c_str()) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("not 'adapter'") != std::string::npos);

  // The merged and the base models load into a full fine-tuning session.
  remat_session_params full = small_params();
  REQUIRE(remat_device_open(nullptr, &c.device) == REMAT_OK);
  REQUIRE(remat_session_create(c.device, &full, &c.session) == REMAT_OK);
  CHECK(remat_session_load_file(c.session, merged.c_str()) == REMAT_OK);
  CHECK(remat_session_load_file(c.session, base.c_str()) == REMAT_OK);
  std::filesystem::remove_all(dir);
}

TEST_CASE("c api: bad LoRA params and adapters are invalid arguments naming the field") {
  remat_plan_report report{sizeof(remat_plan_report)};
  remat_session_params p = lora_params();
  p.lora_targets = "q_proj";
  CHECK(remat_plan(&p, &report) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("'q_proj'") != std::string::npos);
  p = lora_params();
  p.lora_rank = -1;
  CHECK(remat_plan(&p, &report) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("lora_rank") != std::string::npos);
  p = small_params();
  p.lora_alpha = 4;
  CHECK(remat_plan(&p, &report) == REMAT_ERROR_INVALID_ARGUMENT);

  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  const remat_session_params good = lora_params();
  REQUIRE(remat_session_create(h.device, &good, &h.session) == REMAT_OK);
  CHECK(remat_session_load_adapter(h.session, "/nonexistent") == REMAT_ERROR_IO);
  const auto dir = remat::test::scratch_dir("lora_bad");
  REQUIRE(remat_session_save_adapter(h.session, dir.c_str()) == REMAT_OK);
  std::string config = file_text(dir / "adapter_config.json");
  config.replace(config.find("\"use_dora\": false"), 17, "\"use_dora\": true");
  std::ofstream(dir / "adapter_config.json") << config;
  CHECK(remat_session_load_adapter(h.session, dir.c_str()) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("use_dora") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("c api: a params struct from before the LoRA fields still plans, as full fine-tuning") {
  remat_session_params p = small_params();
  remat_plan_report now{sizeof(remat_plan_report)}, old{sizeof(remat_plan_report)};
  REQUIRE(remat_plan(&p, &now) == REMAT_OK);
  // An older app's struct ends before lora_rank; whatever follows it in memory is not read.
  p.struct_size = offsetof(remat_session_params, lora_rank);
  p.lora_rank = 3;
  p.lora_targets = "garbage that must not be read";
  REQUIRE(remat_plan(&p, &old) == REMAT_OK);
  CHECK(old.persistent_bytes == now.persistent_bytes);
  p.struct_size = offsetof(remat_session_params, lora_rank) + 4;
  CHECK(remat_plan(&p, &old) == REMAT_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("c api: weights_dtype stores the frozen base in 16 bits, and is refused without LoRA") {
  remat_plan_report f32{sizeof(remat_plan_report)}, bf16{sizeof(remat_plan_report)};
  remat_session_params p = lora_params();
  REQUIRE(remat_plan(&p, &f32) == REMAT_OK);
  p.weights_dtype = REMAT_DTYPE_BF16;
  REQUIRE(remat_plan(&p, &bf16) == REMAT_OK);
  CHECK(bf16.persistent_bytes < f32.persistent_bytes);
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  train(h.session, 1);
  p.weights_dtype = 7;
  CHECK(remat_plan(&p, &bf16) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("weights_dtype") != std::string::npos);
  p = small_params();
  p.weights_dtype = REMAT_DTYPE_F16;
  CHECK(remat_plan(&p, &bf16) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("lora_rank") != std::string::npos);
  // A struct from before weights_dtype is read as F32.
  p = lora_params();
  p.weights_dtype = REMAT_DTYPE_BF16;  // beyond the size the struct claims: never read
  p.struct_size = offsetof(remat_session_params, weights_dtype);
  REQUIRE(remat_plan(&p, &bf16) == REMAT_OK);
  CHECK(bf16.persistent_bytes == f32.persistent_bytes);
}

TEST_CASE("c api: act_dtype stores activations in 16 bits, on a 16-bit base too") {
  remat_plan_report f32{sizeof(remat_plan_report)}, bf16{sizeof(remat_plan_report)};
  remat_session_params p = lora_params();
  p.weights_dtype = REMAT_DTYPE_BF16;
  REQUIRE(remat_plan(&p, &f32) == REMAT_OK);
  p.act_dtype = REMAT_DTYPE_BF16;
  REQUIRE(remat_plan(&p, &bf16) == REMAT_OK);
  CHECK(bf16.arena_bytes < f32.arena_bytes);
  CHECK(bf16.persistent_bytes == f32.persistent_bytes);
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  train(h.session, 1);
  p.act_dtype = -1;
  CHECK(remat_plan(&p, &bf16) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("act_dtype") != std::string::npos);
  // A struct from before act_dtype is read with f32 activations.
  p.act_dtype = REMAT_DTYPE_F16;  // beyond the size the struct claims: never read
  p.struct_size = offsetof(remat_session_params, act_dtype);
  REQUIRE(remat_plan(&p, &bf16) == REMAT_OK);
  CHECK(bf16.arena_bytes == f32.arena_bytes);
}

TEST_CASE("c api: a quantized GGUF base kept in its blocks trains as its decoded values") {
  const auto dir = remat::test::scratch_dir("quantized_base");
  remat_session_params p;
  REQUIRE(remat_session_params_default(&p) == REMAT_OK);
  p.model = "llama-tiny";
  p.batch = 2;
  p.seq = 16;
  p.policy = "none";
  p.pipeline_cache_dir = "";
  // The preset's seeded weights, saved by a full session, then quantized to q8_0.
  {
    Handles full;
    REQUIRE(remat_device_open(nullptr, &full.device) == REMAT_OK);
    REQUIRE(remat_session_create(full.device, &p, &full.session) == REMAT_OK);
    REQUIRE(remat_session_save_file(full.session, (dir / "f32.gguf").string().c_str()) == REMAT_OK);
  }
  const remat::GgufWeights f32(remat::GgufFile::open(dir / "f32.gguf"));
  std::vector<remat::test::GgufParam> params;
  for (const remat::SafetensorsEntry& e : f32.header().tensors) {
    remat::test::GgufParam q{e.name, e.shape, std::vector<float>(std::size_t(e.elements()))};
    f32.read(e, 0, q.values);
    params.push_back(std::move(q));
  }
  const std::string q8 = (dir / "q8.gguf").string();
  remat::test::write_gguf_model(q8, params, f32.model(), remat::GgufArch::llama,
                                remat::GgmlType::q8_0);

  p.lora_rank = 4;
  remat_session_params blocks = p;
  blocks.quantized_base = q8.c_str();
  remat_plan_report decoded_plan{sizeof(remat_plan_report)}, blocks_plan{sizeof(remat_plan_report)};
  REQUIRE(remat_plan(&p, &decoded_plan) == REMAT_OK);
  REQUIRE(remat_plan(&blocks, &blocks_plan) == REMAT_OK);
  CHECK(blocks_plan.persistent_bytes < decoded_plan.persistent_bytes);

  std::vector<float> losses[2];
  for (int i = 0; i < 2; ++i) {
    Handles h;
    REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
    REQUIRE(remat_session_create(h.device, i ? &blocks : &p, &h.session) == REMAT_OK);
    REQUIRE(remat_session_load_file(h.session, q8.c_str()) == REMAT_OK);
    for (int step = 0; step < 2; ++step) {
      const auto b = pattern_batch(32, 256, step);
      float loss = -1;
      REQUIRE(remat_session_step(h.session, b.tokens.data(), b.targets.data(), b.tokens.size(),
                                 &loss) == REMAT_OK);
      losses[i].push_back(loss);
    }
  }
  CHECK(losses[0] == losses[1]);

  remat_plan_report r{sizeof(remat_plan_report)};
  remat_session_params bad = blocks;
  bad.lora_rank = 0;  // full fine-tuning does not read the file's blocks ...
  CHECK(remat_plan(&bad, &r) == REMAT_OK);
  bad.base_blocks = REMAT_BASE_BLOCKS_KEEP;  // ... and cannot keep them
  CHECK(remat_plan(&bad, &r) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("needs params->lora_rank") != std::string::npos);
  bad = blocks;
  bad.model = "smollm2-135m";
  CHECK(remat_plan(&bad, &r) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("another model") != std::string::npos);
}

// The C API keeps a GGUF base's quantized matrices in their blocks under LoRA by default, as the
// CLI does for --lora on a .gguf --init (formats/base_blocks.h decides for both), and decodes
// them when asked (base_blocks REMAT_BASE_BLOCKS_DECODE, the CLI's --base-blocks no). Plans only:
// no device is needed.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstring>
#include <string>

#include "formats/gpt2_weights.h"
#include "formats/safetensors.h"
#include "remat/remat.h"
#include "tests/api/api_test_params.h"
#include "tests/api/check_error.h"
#include "tests/support/gguf_model_files.h"
#include "tests/support/run_command.h"

using remat::test::check_error;

namespace {

remat_plan_report plan_of(const remat_session_params& p) {
  remat_plan_report r{sizeof(remat_plan_report)};
  INFO(remat_last_error());
  REQUIRE(remat_plan(&p, &r) == REMAT_OK);
  return r;
}

// `remat plan`'s persistent bytes for the same request.
uint64_t cli_persistent_bytes(const std::string& args) {
  const auto r = remat::test::run_remat("plan " + args + " --json");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string key = "\"persistent_bytes\": ";
  const std::size_t at = r.out.find(key);
  REQUIRE(at != std::string::npos);
  return std::stoull(r.out.substr(at + key.size()));
}

// A two-layer Llama of whole q8_0 blocks, its matrices quantized (tests/support).
std::string write_q8_model(const std::filesystem::path& dir) {
  const remat::ModelConfig m = remat::test::block_llama_model(64, 32, false);
  const std::string path = (dir / "q8.gguf").string();
  remat::test::write_gguf_model(path, remat::test::random_gguf_params(m, 5), m,
                                remat::GgufArch::llama, remat::GgmlType::q8_0);
  return path;
}

}  // namespace

TEST_CASE("c api: LoRA on a GGUF file from params_from_file keeps its blocks, as remat plan does") {
  const auto dir = remat::test::scratch_dir("base_blocks");
  const std::string q8 = write_q8_model(dir);
  remat_session_params p;
  REQUIRE(remat_session_params_default(&p) == REMAT_OK);
  {
    // The app's buffer may be reused at once: the params point to remat's own copy.
    std::string app_buffer = q8;
    REQUIRE(remat_session_params_from_file(&p, app_buffer.c_str()) == REMAT_OK);
    app_buffer.assign(app_buffer.size(), 'x');
  }
  REQUIRE(p.quantized_base != nullptr);
  CHECK(std::string(p.quantized_base) == q8);
  CHECK(p.base_blocks == REMAT_BASE_BLOCKS_AUTO);
  p.batch = 2;
  p.seq = 16;
  p.policy = "none";
  p.lora_rank = 4;
  const remat_plan_report kept = plan_of(p);
  remat_session_params decode = p;
  decode.base_blocks = REMAT_BASE_BLOCKS_DECODE;
  const remat_plan_report decoded = plan_of(decode);
  remat_session_params no_base = p;
  no_base.quantized_base = nullptr;
  // Sixteen matrices of 34-byte blocks of 32 values instead of 128 bytes of f32.
  CHECK(kept.persistent_bytes < decoded.persistent_bytes);
  CHECK(decoded.persistent_bytes == plan_of(no_base).persistent_bytes);
  remat_session_params keep = p;
  keep.base_blocks = REMAT_BASE_BLOCKS_KEEP;
  CHECK(plan_of(keep).persistent_bytes == kept.persistent_bytes);

  // The same bytes `remat plan --init` plans, with and without --base-blocks no.
  const std::string args = "--init '" + q8 + "' --lora 4 --batch 2 --seq 16 --policy none";
  CHECK(cli_persistent_bytes(args) == kept.persistent_bytes);
  CHECK(cli_persistent_bytes(args + " --base-blocks no") == decoded.persistent_bytes);

  // A struct from before base_blocks reads as AUTO: the field past its size is never read.
  remat_session_params old = decode;
  old.struct_size = offsetof(remat_session_params, base_blocks);
  CHECK(plan_of(old).persistent_bytes == kept.persistent_bytes);
}

TEST_CASE("c api: without LoRA a GGUF file's blocks are not read, and base_blocks is checked") {
  const auto dir = remat::test::scratch_dir("base_blocks_full");
  const std::string q8 = write_q8_model(dir);
  remat_session_params p;
  REQUIRE(remat_session_params_default(&p) == REMAT_OK);
  REQUIRE(remat_session_params_from_file(&p, q8.c_str()) == REMAT_OK);
  p.batch = 2;
  p.seq = 16;
  p.policy = "none";
  // Full fine-tuning from the file: the same plan as without it.
  remat_session_params no_base = p;
  no_base.quantized_base = nullptr;
  CHECK(plan_of(p).persistent_bytes == plan_of(no_base).persistent_bytes);

  remat_plan_report r{sizeof(remat_plan_report)};
  remat_session_params bad = p;
  bad.base_blocks = REMAT_BASE_BLOCKS_KEEP;
  check_error(remat_plan(&bad, &r), REMAT_ERROR_INVALID_ARGUMENT, "needs params->lora_rank");
  bad.base_blocks = REMAT_BASE_BLOCKS_DECODE;
  check_error(remat_plan(&bad, &r), REMAT_ERROR_INVALID_ARGUMENT, "needs params->lora_rank");
  bad.lora_rank = 4;
  bad.quantized_base = nullptr;
  check_error(remat_plan(&bad, &r), REMAT_ERROR_INVALID_ARGUMENT,
              "params->base_blocks chooses how params->quantized_base is stored");
  bad = p;
  bad.lora_rank = 4;
  bad.base_blocks = 3;
  check_error(remat_plan(&bad, &r), REMAT_ERROR_INVALID_ARGUMENT, "params->base_blocks is 3");
  // Under LoRA the file must still be the params' model.
  bad.base_blocks = REMAT_BASE_BLOCKS_AUTO;
  bad.layers = 1;
  check_error(remat_plan(&bad, &r), REMAT_ERROR_INVALID_ARGUMENT, "another model");
}

TEST_CASE("c api: params from any other checkpoint have no quantized base") {
  const auto dir = remat::test::scratch_dir("base_blocks_other");
  const remat::ModelConfig gpt2{2, 32, 2, 64, 16};
  std::vector<remat::NamedTensor> tensors;
  for (auto& t : remat::test::random_gguf_params(gpt2, 1))
    tensors.push_back({t.name, t.shape, t.values});
  const std::string st = (dir / "m.safetensors").string();
  remat::write_safetensors(st, tensors, remat::gpt2_metadata(gpt2));
  remat_session_params p;
  REQUIRE(remat_session_params_default(&p) == REMAT_OK);
  REQUIRE(remat_session_params_from_file(&p, write_q8_model(dir).c_str()) == REMAT_OK);
  REQUIRE(p.quantized_base != nullptr);
  REQUIRE(remat_session_params_from_file(&p, st.c_str()) == REMAT_OK);
  CHECK(p.quantized_base == nullptr);
  CHECK(p.layers == 2);
  const std::string image = remat::serialize_safetensors(tensors, remat::gpt2_metadata(gpt2));
  REQUIRE(remat_session_params_from_file(&p, write_q8_model(dir).c_str()) == REMAT_OK);
  REQUIRE(remat_session_params_from_memory(&p, image.data(), image.size()) == REMAT_OK);
  CHECK(p.quantized_base == nullptr);
}

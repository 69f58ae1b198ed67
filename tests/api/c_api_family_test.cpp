// The model's family through the C API: remat_session_params_from_file describes a Hugging Face
// folder of every family remat trains (gpt2, llama, qwen2, qwen3, Llama 3's scaled RoPE, Gemma 3,
// Qwen3.5: tests/api/c_api_qwen35_test.cpp) and a .gguf file completely, family fields included;
// such params plan, create sessions that load the folder and train, and save files that describe
// the same model again. Older struct sizes and bad family fields are refused by name.
#include <catch2/catch.hpp>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "base/atomic_file.h"
#include "base/json.h"
#include "formats/hf_config.h"
#include "graph/model_config.h"
#include "remat/remat.h"
#include "tests/api/api_test_params.h"
#include "tests/api/check_error.h"

using remat::test::check_error;
using remat::test::Handles;
using remat::test::pattern_batch;
namespace fs = std::filesystem;

namespace {

// A folder holding `model`'s config.json, as transformers writes it.
fs::path config_folder(const fs::path& dir, const remat::ModelConfig& model) {
  fs::create_directories(dir);
  remat::write_file_atomically(dir / "config.json", remat::hf_config_json(model));
  return dir;
}

// Whether two params describe the same model: every model field, the family's included.
bool same_model(const remat_session_params& a, const remat_session_params& b) {
  return a.model == b.model && a.layers == b.layers && a.dim == b.dim && a.heads == b.heads &&
         a.vocab == b.vocab && a.ctx == b.ctx && a.family == b.family && a.kv_heads == b.kv_heads &&
         a.ffn == b.ffn && a.head_dim == b.head_dim && a.rope_theta == b.rope_theta &&
         a.norm_eps == b.norm_eps && a.tied_head == b.tied_head && a.qkv_bias == b.qkv_bias &&
         a.qk_norm == b.qk_norm && a.rope_scaling == b.rope_scaling &&
         a.rope_factor == b.rope_factor && a.rope_low_freq_factor == b.rope_low_freq_factor &&
         a.rope_high_freq_factor == b.rope_high_freq_factor &&
         a.rope_original_ctx == b.rope_original_ctx && a.sliding_window == b.sliding_window &&
         a.sliding_window_pattern == b.sliding_window_pattern &&
         a.rope_local_theta == b.rope_local_theta &&
         a.query_pre_attn_scalar == b.query_pre_attn_scalar;
}

remat_session_params params_of(const fs::path& path) {
  remat_session_params p;
  REQUIRE(remat_session_params_default(&p) == REMAT_OK);
  REQUIRE(remat_session_params_from_file(&p, path.string().c_str()) == REMAT_OK);
  p.batch = 2;
  p.seq = 8;
  p.policy = "none";
  p.pipeline_cache_dir = "";
  return p;
}

// Qwen3 of odd sizes: q/k norms, head_dim 12 on a width of 40, 5 query heads on 1 key/value head.
remat::ModelConfig odd_qwen3() {
  remat::ModelConfig m = remat::ModelConfig::preset("qwen3-0.6b");
  m.layers = 2;
  m.dim = 40;
  m.heads = 5;
  m.kv_heads = 1;
  m.head_size = 12;
  m.ffn = 72;
  m.vocab = 131;
  m.ctx = 32;
  return m;
}

// Gemma 3 of odd sizes: 3 layers (the second global), 3 query heads of 16 on one key/value head
// over a width of 40, a window of 4 (the sessions run 8 positions), query_pre_attn_scalar 24 and
// linear RoPE scaling by 4 on the global layer.
remat::ModelConfig odd_gemma3() {
  remat::ModelConfig m = remat::ModelConfig::preset("gemma3-270m");
  m.layers = 3;
  m.dim = 40;
  m.heads = 3;
  m.head_size = 16;
  m.ffn = 72;
  m.vocab = 131;
  m.ctx = 32;
  m.gemma = {4, 2, 10000.0f, 24.0f, 4.0f};
  return m;
}

}  // namespace

TEST_CASE("c api: params from a folder of each family describe it field by field") {
  const auto dir = remat::test::scratch_dir("family_params");
  for (std::string_view name : remat::ModelConfig::preset_names()) {
    INFO(name);
    const remat::ModelConfig m = remat::ModelConfig::preset(name);
    const remat_session_params p = params_of(config_folder(dir / std::string(name), m));
    CHECK(p.model == nullptr);
    CHECK((p.layers == m.layers && p.dim == m.dim && p.heads == m.heads && p.vocab == m.vocab &&
           p.ctx == m.ctx));
    const bool llama = m.arch == remat::Architecture::llama;
    CHECK(p.family == (m.gemma3   ? REMAT_FAMILY_GEMMA3
                       : m.qwen35 ? REMAT_FAMILY_QWEN35
                       : llama    ? REMAT_FAMILY_LLAMA
                                  : REMAT_FAMILY_GPT2));
    CHECK(p.full_attention_interval == m.qwen35_layers.full_attention_interval);
    CHECK(p.linear_value_heads == m.qwen35_layers.linear_value_heads);
    CHECK(p.sliding_window == m.gemma.sliding_window);
    CHECK(p.sliding_window_pattern == m.gemma.pattern);
    CHECK(float(p.rope_local_theta) == m.gemma.local_rope_theta);
    CHECK(float(p.query_pre_attn_scalar) == m.gemma.query_scalar);
    if (!llama) continue;
    CHECK(p.kv_heads == m.kv_heads);
    CHECK(p.ffn == m.ffn);
    CHECK(p.head_dim == m.head_size);
    CHECK(float(p.rope_theta) == m.rope_theta);
    CHECK(float(p.norm_eps) == m.norm_eps);
    CHECK(p.tied_head == int32_t(m.tied_head));
    CHECK(p.qkv_bias == int32_t(m.qkv_bias));
    CHECK(p.qk_norm == int32_t(m.qk_norm));
    const bool llama3 = m.rope_scaling == remat::RopeScaling::llama3;
    CHECK(p.rope_scaling == (llama3 ? REMAT_ROPE_LLAMA3 : REMAT_ROPE_NONE));
    CHECK(float(p.rope_factor) == (m.gemma3 ? m.gemma.rope_linear : m.llama3.factor));
    CHECK(p.rope_original_ctx == m.llama3.original_ctx);
    // The same model as the preset: the same plan, parameters included.
    remat_session_params preset = p;
    const std::string preset_name(name);
    preset.model = preset_name.c_str();
    remat_plan_report a{sizeof(remat_plan_report)}, b{sizeof(remat_plan_report)};
    REQUIRE(remat_plan(&p, &a) == REMAT_OK);
    preset.family = REMAT_FAMILY_PRESET;
    preset.kv_heads = preset.ffn = preset.head_dim = 0;
    preset.rope_theta = preset.norm_eps = 0;
    preset.tied_head = preset.qkv_bias = preset.qk_norm = preset.rope_scaling = 0;
    preset.rope_factor = preset.rope_low_freq_factor = preset.rope_high_freq_factor = 0;
    preset.rope_original_ctx = 0;
    preset.sliding_window = preset.sliding_window_pattern = 0;
    preset.rope_local_theta = preset.query_pre_attn_scalar = 0;
    preset.full_attention_interval = preset.linear_key_heads = preset.linear_value_heads = 0;
    preset.linear_key_head_dim = preset.linear_value_head_dim = preset.conv_kernel = 0;
    preset.partial_rotary_factor = 0;
    preset.mtp_layers = preset.mrope_interleaved = 0;
    preset.mrope_section[0] = preset.mrope_section[1] = preset.mrope_section[2] = 0;
    preset.layers = preset.dim = preset.heads = preset.vocab = preset.ctx = 0;
    REQUIRE(remat_plan(&preset, &b) == REMAT_OK);
    CHECK(a.parameter_count == b.parameter_count);
    CHECK(a.parameter_count == m.parameter_count());
    CHECK(a.persistent_bytes == b.persistent_bytes);
  }
  fs::remove_all(dir);
}

TEST_CASE("c api: a Qwen3 folder and its .gguf describe, load, train and save as Qwen3") {
  const auto dir = remat::test::scratch_dir("family_qwen3");
  const remat::ModelConfig m = odd_qwen3();
  const fs::path folder = config_folder(dir / "qwen3", m);
  remat_session_params p = params_of(folder);
  CHECK(p.qk_norm == 1);
  CHECK(p.head_dim == 12);
  // Weights for the folder: a seeded session of the params, saved as model.safetensors.
  p.seed = 5;
  {
    Handles h;
    REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
    REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
    const std::string weights = (folder / "model.safetensors").string();
    REQUIRE(remat_session_save_file(h.session, weights.c_str()) == REMAT_OK);
    const std::string gguf = (dir / "qwen3.gguf").string();
    REQUIRE(remat_session_save_file(h.session, gguf.c_str()) == REMAT_OK);
    // Each file alone describes the whole model again.
    for (const std::string& path : {weights, gguf}) {
      INFO(path);
      CHECK(same_model(params_of(path), p));
    }
    // The safetensors image in memory too: its metadata names the model.
    std::ifstream f(weights, std::ios::binary);
    const std::string image{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    remat_session_params in_memory;
    REQUIRE(remat_session_params_default(&in_memory) == REMAT_OK);
    REQUIRE(remat_session_params_from_memory(&in_memory, image.data(), image.size()) == REMAT_OK);
    CHECK(same_model(in_memory, p));
  }
  // A session of other seed loads the folder and trains on it; the loss falls.
  p.seed = 9;
  p.learning_rate = 1e-2;
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  REQUIRE(remat_session_load_file(h.session, folder.string().c_str()) == REMAT_OK);
  float first = 0, last = 0;
  for (int step = 0; step < 8; ++step) {
    const auto b = pattern_batch(16, uint32_t(m.vocab), step);
    REQUIRE(remat_session_step(h.session, b.tokens.data(), b.targets.data(), b.tokens.size(),
                               &last) == REMAT_OK);
    if (step == 0) first = last;
  }
  CHECK(last < first);
  const std::string out = (dir / "tuned").string();
  REQUIRE(remat_session_save_file(h.session, out.c_str()) == REMAT_OK);
  CHECK(same_model(params_of(out), p));
  fs::remove_all(dir);
}

TEST_CASE("c api: a Gemma 3 folder describes, loads, trains and saves as Gemma 3") {
  const auto dir = remat::test::scratch_dir("family_gemma3");
  const remat::ModelConfig m = odd_gemma3();
  const fs::path folder = config_folder(dir / "gemma3", m);
  remat_session_params p = params_of(folder);
  CHECK(p.family == REMAT_FAMILY_GEMMA3);
  CHECK(p.sliding_window == 4);
  CHECK(p.sliding_window_pattern == 2);
  CHECK(p.rope_local_theta == 10000.0);
  CHECK(p.query_pre_attn_scalar == 24.0);
  CHECK(p.head_dim == 16);
  CHECK(p.qk_norm == 1);
  CHECK(p.rope_scaling == REMAT_ROPE_LINEAR);
  CHECK(p.rope_factor == 4.0);
  p.seed = 5;
  {
    Handles h;
    REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
    REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
    const std::string weights = (folder / "model.safetensors").string();
    REQUIRE(remat_session_save_file(h.session, weights.c_str()) == REMAT_OK);
    CHECK(same_model(params_of(weights), p));
    // llama.cpp scales gemma3's queries by the head size (16), not query_pre_attn_scalar 24: the
    // GGUF save fails naming the key, and writes nothing.
    const std::string gguf = (dir / "gemma3.gguf").string();
    check_error(remat_session_save_file(h.session, gguf.c_str()), REMAT_ERROR_IO,
                "query_pre_attn_scalar");
    CHECK_FALSE(fs::exists(gguf));
  }
  p.seed = 9;
  p.learning_rate = 1e-2;
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  REQUIRE(remat_session_load_file(h.session, folder.string().c_str()) == REMAT_OK);
  float first = 0, last = 0;
  for (int step = 0; step < 8; ++step) {
    const auto b = pattern_batch(16, uint32_t(m.vocab), step);
    REQUIRE(remat_session_step(h.session, b.tokens.data(), b.targets.data(), b.tokens.size(),
                               &last) == REMAT_OK);
    if (step == 0) first = last;
  }
  CHECK(last < first);
  const std::string out = (dir / "tuned").string();
  REQUIRE(remat_session_save_file(h.session, out.c_str()) == REMAT_OK);
  CHECK(same_model(params_of(out), p));
  const std::string config = (dir / "tuned" / "config.json").string();
  CHECK(remat::model_config_from_hf_json([&] {
          std::ifstream f(config);
          return std::string{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
        }()) == m);
  // A struct that ends before the Gemma fields cannot describe it, and says so.
  remat_session_params old;
  REQUIRE(remat_session_params_default(&old) == REMAT_OK);
  old.struct_size = offsetof(remat_session_params, sliding_window);
  check_error(remat_session_params_from_file(&old, folder.string().c_str()),
              REMAT_ERROR_INVALID_ARGUMENT, "sliding_window");
  // Gemma fields under another family are refused by name.
  remat_session_params llama = p;
  llama.family = REMAT_FAMILY_LLAMA;
  remat_plan_report r{sizeof(remat_plan_report)};
  check_error(remat_plan(&llama, &r), REMAT_ERROR_INVALID_ARGUMENT, "Gemma 3 fields");
  fs::remove_all(dir);
}

namespace {

remat::JsonValue read_config(const fs::path& folder) {
  std::ifstream f(folder / "config.json");
  return remat::parse_json(
      std::string{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()});
}

}  // namespace

TEST_CASE("c api: a folder is saved with the config.json keys it was read with") {
  const auto dir = remat::test::scratch_dir("family_config_keys");
  remat::ModelConfig m = odd_gemma3();
  m.config_keys.keys = remat::HfKeys::transformers5;
  const fs::path folder = config_folder(dir / "v5", m);
  remat_session_params p = params_of(folder);
  CHECK(p.config_keys == REMAT_CONFIG_KEYS_TRANSFORMERS5);
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  const std::string v5 = (dir / "out5").string();
  REQUIRE(remat_session_save_file(h.session, v5.c_str()) == REMAT_OK);
  const remat::JsonValue saved = read_config(v5);
  CHECK(saved.find("rope_parameters") != nullptr);
  CHECK(saved.find("rope_local_base_freq") == nullptr);
  CHECK(saved.find("dtype") != nullptr);
  CHECK(params_of(v5).config_keys == REMAT_CONFIG_KEYS_TRANSFORMERS5);
  CHECK(same_model(params_of(v5), p));
  // The default, and a struct that ends before the field, keep transformers 4's keys.
  remat_session_params old;
  REQUIRE(remat_session_params_default(&old) == REMAT_OK);
  CHECK(old.config_keys == REMAT_CONFIG_KEYS_TRANSFORMERS4);
  old.struct_size = offsetof(remat_session_params, config_keys);
  old.config_keys = 99;  // beyond the struct: never read or written
  REQUIRE(remat_session_params_from_file(&old, folder.string().c_str()) == REMAT_OK);
  CHECK(old.config_keys == 99);
  old.batch = 2;
  old.seq = 8;
  old.pipeline_cache_dir = "";
  Handles o;
  REQUIRE(remat_device_open(nullptr, &o.device) == REMAT_OK);
  REQUIRE(remat_session_create(o.device, &old, &o.session) == REMAT_OK);
  const std::string v4 = (dir / "out4").string();
  REQUIRE(remat_session_save_file(o.session, v4.c_str()) == REMAT_OK);
  CHECK(read_config(v4).find("rope_local_base_freq") != nullptr);
  CHECK(read_config(v4).find("torch_dtype") != nullptr);
  p.config_keys = 2;
  remat_plan_report r{sizeof(remat_plan_report)};
  check_error(remat_plan(&p, &r), REMAT_ERROR_INVALID_ARGUMENT, "params->config_keys is 2");
  fs::remove_all(dir);
}

TEST_CASE("c api: family fields are checked, and older structs describe GPT-2 only") {
  const auto dir = remat::test::scratch_dir("family_errors");
  remat_session_params p;
  REQUIRE(remat_session_params_default(&p) == REMAT_OK);
  remat_plan_report r{sizeof(remat_plan_report)};
  p.kv_heads = 2;  // without a family: the preset's family is GPT-2's
  check_error(remat_plan(&p, &r), REMAT_ERROR_INVALID_ARGUMENT, "kv_heads");
  p.family = 7;
  check_error(remat_plan(&p, &r), REMAT_ERROR_INVALID_ARGUMENT, "params->family is 7");
  p.family = REMAT_FAMILY_LLAMA;
  p.kv_heads = 3;  // does not divide tiny's 4 heads
  check_error(remat_plan(&p, &r), REMAT_ERROR_INVALID_ARGUMENT);
  p.kv_heads = 2;
  p.rope_factor = 8;
  check_error(remat_plan(&p, &r), REMAT_ERROR_INVALID_ARGUMENT, "REMAT_ROPE_LLAMA3");
  p.rope_factor = 0;
  p.norm_eps = -1;
  check_error(remat_plan(&p, &r), REMAT_ERROR_INVALID_ARGUMENT, "norm_eps");
  p.norm_eps = 0;
  REQUIRE(remat_plan(&p, &r) == REMAT_OK);  // tiny's sizes as a Llama
  // A struct from before `family` reads GPT-2 folders as before and refuses a Llama folder,
  // writing nothing past its own end.
  const fs::path llama = config_folder(dir / "llama", remat::ModelConfig::preset("llama-tiny"));
  remat_session_params old;
  REQUIRE(remat_session_params_default(&old) == REMAT_OK);
  old.struct_size = offsetof(remat_session_params, family);
  old.family = 99;  // beyond the struct: never read or written
  check_error(remat_session_params_from_file(&old, llama.string().c_str()),
              REMAT_ERROR_INVALID_ARGUMENT, "GPT-2 models only");
  const fs::path gpt2 = config_folder(dir / "gpt2", remat::ModelConfig{2, 32, 2, 64, 16});
  REQUIRE(remat_session_params_from_file(&old, gpt2.string().c_str()) == REMAT_OK);
  CHECK(old.family == 99);
  CHECK(old.layers == 2);
  CHECK(old.struct_size == offsetof(remat_session_params, family));
  old.seq = 8;  // within the folder's ctx 16
  REQUIRE(remat_plan(&old, &r) == REMAT_OK);
  fs::remove_all(dir);
}

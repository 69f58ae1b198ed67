// Qwen3.5 through the C API (REMAT_FAMILY_QWEN35): remat_session_params_from_file describes a
// Qwen3.5 folder and .gguf file field by field; a session of those params plans as `remat plan`
// plans the file, computes the library Session's loss and samples bit for bit, loads the file,
// trains, saves and generates; bad Qwen3.5 fields and older structs are refused in one line.
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "formats/hf_config.h"
#include "formats/hf_folder.h"
#include "graph/model_config.h"
#include "remat/remat.h"
#include "runtime/session.h"
#include "tests/api/api_test_params.h"
#include "tests/api/check_error.h"
#include "tests/support/json_number.h"
#include "tests/support/run_command.h"
#include "tests/support/test_device.h"

using remat::test::check_error;
using remat::test::Handles;
using remat::test::pattern_batch;
namespace fs = std::filesystem;

namespace {

// Qwen3.5 of odd sizes: 3 layers (two Gated DeltaNet, the third gated full attention), 3 query
// heads of 16 on one key/value head over a width of 40, half of each head rotated; 2 linear key
// heads shared by 4 value heads, all of 12 (llama.cpp's qwen35 reads one state size for both;
// the GGUF's value-head reorder is not the identity), a 3-tap conv1d.
remat::ModelConfig odd_qwen35() {
  remat::ModelConfig m = remat::ModelConfig::preset("qwen3.5-tiny");
  m.layers = 3;
  m.dim = 40;
  m.heads = 3;
  m.kv_heads = 1;
  m.head_size = 16;
  m.ffn = 72;
  m.vocab = 131;
  m.ctx = 160;
  m.rope_theta = 1000000.0f;
  m.qwen35_layers = {3, 2, 4, 12, 12, 3, 0.5f, 0, {2, 1, 1}, true};
  m.validate();
  return m;
}

fs::path config_folder(const fs::path& dir, const remat::ModelConfig& model) {
  fs::create_directories(dir);
  remat::write_file_atomically(dir / "config.json", remat::hf_config_json(model));
  return dir;
}

remat_session_params params_of(const fs::path& path) {
  remat_session_params p;
  REQUIRE(remat_session_params_default(&p) == REMAT_OK);
  const remat_status s = remat_session_params_from_file(&p, path.string().c_str());
  INFO(remat_last_error());
  REQUIRE(s == REMAT_OK);
  p.batch = 2;
  p.seq = 16;
  p.policy = "none";
  p.pipeline_cache_dir = "";
  return p;
}

// Every field the Qwen3.5 family reads, as `m` holds it.
void check_fields(const remat_session_params& p, const remat::ModelConfig& m) {
  const remat::Qwen35Layers& q = m.qwen35_layers;
  CHECK(p.model == nullptr);
  CHECK((p.layers == m.layers && p.dim == m.dim && p.heads == m.heads && p.vocab == m.vocab &&
         p.ctx == m.ctx));
  CHECK(p.family == REMAT_FAMILY_QWEN35);
  CHECK(p.kv_heads == m.kv_heads);
  CHECK(p.ffn == m.ffn);
  CHECK(p.head_dim == m.head_size);
  CHECK(float(p.rope_theta) == m.rope_theta);
  CHECK(float(p.norm_eps) == m.norm_eps);
  CHECK(p.tied_head == int32_t(m.tied_head));
  CHECK(p.qk_norm == 1);
  CHECK((p.qkv_bias == 0 && p.rope_scaling == REMAT_ROPE_NONE && p.sliding_window == 0));
  CHECK(p.full_attention_interval == q.full_attention_interval);
  CHECK(p.linear_key_heads == q.linear_key_heads);
  CHECK(p.linear_value_heads == q.linear_value_heads);
  CHECK(p.linear_key_head_dim == q.linear_key_head_dim);
  CHECK(p.linear_value_head_dim == q.linear_value_head_dim);
  CHECK(p.conv_kernel == q.conv_kernel);
  CHECK(float(p.partial_rotary_factor) == q.partial_rotary);
  CHECK(p.mtp_layers == q.mtp_layers);
  CHECK((p.mrope_section[0] == q.mrope_section[0] && p.mrope_section[1] == q.mrope_section[1] &&
         p.mrope_section[2] == q.mrope_section[2]));
  CHECK(p.mrope_interleaved == int32_t(q.mrope_interleaved));
}

std::vector<uint32_t> prompt() {
  return {3, 1, 4, 1, 5};
}

}  // namespace

TEST_CASE("c api: params from a Qwen3.5 folder describe it field by field, as the preset") {
  const auto dir = remat::test::scratch_dir("qwen35_fields");
  check_fields(params_of(config_folder(dir / "odd", odd_qwen35())), odd_qwen35());
  // Qwen3.5-0.8B's config.json: the same model as the preset, so the same plan.
  const remat::ModelConfig m = remat::ModelConfig::preset("qwen3.5-0.8b");
  const remat_session_params p = params_of(config_folder(dir / "0.8b", m));
  check_fields(p, m);
  remat_session_params preset;
  REQUIRE(remat_session_params_default(&preset) == REMAT_OK);
  preset.model = "qwen3.5-0.8b";
  preset.batch = p.batch;
  preset.seq = p.seq;
  preset.policy = p.policy;
  remat_plan_report a{sizeof(remat_plan_report)}, b{sizeof(remat_plan_report)};
  REQUIRE(remat_plan(&p, &a) == REMAT_OK);
  REQUIRE(remat_plan(&preset, &b) == REMAT_OK);
  CHECK(a.parameter_count == m.parameter_count());
  CHECK(a.parameter_count == b.parameter_count);
  CHECK(a.persistent_bytes == b.persistent_bytes);
  CHECK(a.arena_bytes == b.arena_bytes);
  // 2 x 1024 tokens: `remat plan` cuts the recurrence in chunks by default (one chunk's backward
  // workspace would not fit a binding: its kept block values take 136.6 MiB), and remat_plan
  // chooses the same; delta_chunk 0 plans it whole as --delta-chunk 0 does.
  remat_session_params longer = p;
  longer.batch = 2;
  longer.seq = 1024;
  const std::string plan =
      "plan --init '" + (dir / "0.8b").string() + "' --batch 2 --seq 1024 --policy none --json";
  for (const int32_t chunk : {REMAT_DELTA_CHUNK_AUTO, 0}) {
    INFO(chunk);
    longer.delta_chunk = chunk;
    REQUIRE(remat_plan(&longer, &a) == REMAT_OK);
    const auto cli = remat::test::run_remat(plan + (chunk == 0 ? " --delta-chunk 0" : ""));
    INFO(cli.err);
    REQUIRE(cli.exit_code == 0);
    CHECK(remat::test::json_number(cli.out, "arena_bytes") == double(a.arena_bytes));
    CHECK((remat::test::json_number(cli.out, "chunk") == 1024) == (chunk == 0));
  }
  fs::remove_all(dir);
}

TEST_CASE("c api: a Qwen3.5 folder and .gguf plan, step and sample as the CLI and Session do") {
  const auto dir = remat::test::scratch_dir("qwen35_session");
  const remat::ModelConfig m = odd_qwen35();
  const fs::path folder = config_folder(dir / "folder", m);
  const std::string gguf = (dir / "q.gguf").string();
  {  // weights for both files: a seeded session of the folder's params
    remat_session_params p = params_of(folder);
    p.seed = 5;
    Handles h;
    REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
    REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
    REQUIRE(remat_session_save_file(h.session, (folder / "model.safetensors").c_str()) == REMAT_OK);
    REQUIRE(remat_session_save_file(h.session, gguf.c_str()) == REMAT_OK);
  }
  for (const std::string& path : {folder.string(), gguf}) {
    INFO(path);
    remat_session_params p = params_of(path);
    check_fields(p, m);
    p.seed = 9;
    // Without a device: the plan `remat plan --init` makes (its delta chunk chosen the same way).
    remat_plan_report planned{sizeof(remat_plan_report)};
    REQUIRE(remat_plan(&p, &planned) == REMAT_OK);
    const auto cli = remat::test::run_remat("plan --init '" + path +
                                            "' --batch 2 --seq 16 --policy none --json");
    INFO(cli.err);
    REQUIRE(cli.exit_code == 0);
    CHECK(remat::test::json_number(cli.out, "arena_bytes") == double(planned.arena_bytes));
    CHECK(remat::test::json_number(cli.out, "persistent_bytes") ==
          double(planned.persistent_bytes));
    // On the device: the library's Session as `remat train --init` configures it.
    remat::SessionConfig c;
    c.model = remat::checkpoint_model(path, std::nullopt);
    c.shape.batch = 2;
    c.shape.seq = 16;
    c.choose_loss_chunk = true;
    c.choose_delta_chunk = true;
    c.seed = 9;
    c.pipeline_cache_dir = std::nullopt;
    remat::Session internal(remat::test::device(), c);
    internal.load(path);
    Handles h;
    REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
    REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
    REQUIRE(remat_session_load_file(h.session, path.c_str()) == REMAT_OK);
    remat_plan_report made{sizeof(remat_plan_report)};
    REQUIRE(remat_session_plan_report(h.session, &made) == REMAT_OK);
    CHECK(made.arena_bytes == internal.plan().arena_bytes);
    CHECK(made.persistent_bytes == internal.plan().persistent_bytes);
    // Generation from the file's weights, then one step: the same tokens, the same loss bits.
    const std::vector<uint32_t> in = prompt();
    std::vector<uint32_t> out(6);
    REQUIRE(remat_session_sample(h.session, in.data(), in.size(), 6, 3, 0.8f, out.data(),
                                 out.size()) == REMAT_OK);
    CHECK(out == internal.sample(in, 6, 3, 0.8f));
    const auto b = pattern_batch(32, uint32_t(m.vocab), 0);
    float loss = 0;
    REQUIRE(remat_session_step(h.session, b.tokens.data(), b.targets.data(), b.tokens.size(),
                               &loss) == REMAT_OK);
    const float want = internal.step(b.tokens, b.targets);
    CHECK(std::memcmp(&loss, &want, sizeof loss) == 0);
  }
  fs::remove_all(dir);
}

TEST_CASE("c api: a Qwen3.5 session trains, saves what params_from_file reads back and samples") {
  const auto dir = remat::test::scratch_dir("qwen35_train");
  const remat::ModelConfig m = odd_qwen35();
  remat_session_params p = params_of(config_folder(dir / "in", m));
  p.learning_rate = 1e-2;
  p.seq = 80;
  p.delta_chunk = 64;  // two chunks of the 80 tokens, 64 and 16
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  float first = 0, last = 0;
  for (int step = 0; step < 8; ++step) {
    const auto b = pattern_batch(160, uint32_t(m.vocab), step);
    REQUIRE(remat_session_step(h.session, b.tokens.data(), b.targets.data(), b.tokens.size(),
                               &last) == REMAT_OK);
    if (step == 0) first = last;
  }
  CHECK(last < first);
  const std::string out = (dir / "tuned").string();
  REQUIRE(remat_session_save_file(h.session, out.c_str()) == REMAT_OK);
  check_fields(params_of(out), m);
  // The saved folder generates in a fresh session as in the one that trained it.
  const std::vector<uint32_t> in = prompt();
  std::vector<uint32_t> a(5), b(5);
  REQUIRE(remat_session_sample(h.session, in.data(), in.size(), 5, 1, 0.0f, a.data(), a.size()) ==
          REMAT_OK);
  remat_session_params q = params_of(out);
  Handles g;
  REQUIRE(remat_device_open(nullptr, &g.device) == REMAT_OK);
  REQUIRE(remat_session_create(g.device, &q, &g.session) == REMAT_OK);
  REQUIRE(remat_session_load_file(g.session, out.c_str()) == REMAT_OK);
  REQUIRE(remat_session_sample(g.session, in.data(), in.size(), 5, 1, 0.0f, b.data(), b.size()) ==
          REMAT_OK);
  CHECK(a == b);
  for (uint32_t t : a) CHECK(t < uint32_t(m.vocab));
  fs::remove_all(dir);
}

TEST_CASE("c api: Qwen3.5 fields are checked, and older structs name the preset instead") {
  const auto dir = remat::test::scratch_dir("qwen35_errors");
  const fs::path folder = config_folder(dir / "odd", odd_qwen35());
  const remat_session_params good = params_of(folder);
  remat_plan_report r{sizeof(remat_plan_report)};
  REQUIRE(remat_plan(&good, &r) == REMAT_OK);
  const auto refused = [&](auto spoil, const char* mentions) {
    remat_session_params p = good;
    spoil(p);
    check_error(remat_plan(&p, &r), REMAT_ERROR_INVALID_ARGUMENT, mentions);
  };
  refused([](auto& p) { p.family = REMAT_FAMILY_LLAMA; }, "the Qwen3.5 fields");
  refused([](auto& p) { p.family = REMAT_FAMILY_GEMMA3; }, "the Qwen3.5 fields");
  refused([](auto& p) { p.family = REMAT_FAMILY_PRESET; }, "family fields");
  refused([](auto& p) { p.sliding_window = 4; }, "the Gemma 3 fields");
  refused([](auto& p) { p.qkv_bias = 1; }, "qkv_bias must be 0");
  refused([](auto& p) { p.linear_value_heads = 3; },
          "params->linear_key_heads (2) must divide params->linear_value_heads (3)");
  refused([](auto& p) { p.kv_heads = 2; }, "kv_heads (2) must divide heads (3)");
  refused([](auto& p) { p.conv_kernel = 0; }, "params->conv_kernel is 0");
  refused([](auto& p) { p.partial_rotary_factor = 1.5; }, "params->partial_rotary_factor");
  refused([](auto& p) { p.mrope_section[2] = -1; }, "params->mrope_section[2] is negative");
  refused([](auto& p) { p.mrope_section[0] = 3; }, "mrope_section sums to 5");
  refused([](auto& p) { p.delta_chunk = -2; }, "params->delta_chunk is -2");
  // The chunkwise delta rule's blocks sit at multiples of 64 tokens.
  refused([](auto& p) { p.delta_chunk = 8; },
          "params->delta_chunk must be a multiple of 64 tokens (the chunkwise delta rule's block) "
          "or 0 for the whole sequence (or -1, REMAT_DELTA_CHUNK_AUTO), got 8");
  // delta_chunk cuts Qwen3.5's recurrence only.
  remat_session_params llama = remat::test::small_params();
  llama.delta_chunk = 8;
  check_error(remat_plan(&llama, &r), REMAT_ERROR_INVALID_ARGUMENT, "delta_chunk is for Qwen3.5");
  // Written by hand, mrope_section all 0: the preset's model but for how multimodal positions
  // would split its frequencies, so the same plan.
  remat_session_params hand = remat::test::small_params();
  hand.model = nullptr;
  hand.layers = 4, hand.dim = 64, hand.heads = 2, hand.vocab = 256, hand.ctx = 256;
  hand.family = REMAT_FAMILY_QWEN35;
  hand.kv_heads = 1, hand.ffn = 128, hand.rope_theta = 1e7, hand.norm_eps = 1e-6;
  hand.tied_head = 1;
  hand.full_attention_interval = 4, hand.linear_key_heads = 2, hand.linear_value_heads = 4;
  hand.linear_key_head_dim = 16, hand.linear_value_head_dim = 16, hand.conv_kernel = 4;
  hand.partial_rotary_factor = 0.25;
  remat_session_params preset = remat::test::small_params();
  preset.model = "qwen3.5-tiny";
  preset.layers = preset.dim = preset.heads = preset.vocab = preset.ctx = 0;
  remat_plan_report h{sizeof(remat_plan_report)};
  REQUIRE(remat_plan(&hand, &h) == REMAT_OK);
  REQUIRE(remat_plan(&preset, &r) == REMAT_OK);
  CHECK(h.parameter_count == r.parameter_count);
  CHECK(h.arena_bytes == r.arena_bytes);
  // A struct that ends before the Qwen3.5 fields refuses the folder, writing nothing past its end,
  // and still plans a Qwen3.5 preset.
  remat_session_params old;
  REQUIRE(remat_session_params_default(&old) == REMAT_OK);
  old.struct_size = offsetof(remat_session_params, full_attention_interval);
  old.full_attention_interval = 99;  // beyond the struct: never read or written
  check_error(remat_session_params_from_file(&old, folder.string().c_str()),
              REMAT_ERROR_INVALID_ARGUMENT, "ends before `full_attention_interval`");
  CHECK(old.full_attention_interval == 99);
  CHECK(old.model != nullptr);
  old.model = "qwen3.5-tiny";
  old.seq = 16;
  REQUIRE(remat_plan(&old, &r) == REMAT_OK);
  fs::remove_all(dir);
}

// The delta-rule chunk a plan runs: remat_plan_report.delta_chunk is `remat plan --json`'s
// delta_rule.chunk for the same model and shape (under every:1 auto keeps 64 of T 160 for the
// tiny preset; a given length; the whole sequence), a session reports the one it planned, a
// model without Gated DeltaNet layers reports 0, and a report struct from before the field is
// filled up to its end and no further.
TEST_CASE("c api: the plan report carries the delta-rule chunk, as remat plan --json does") {
  remat_session_params p = remat::test::small_params();
  p.model = "qwen3.5-tiny";
  p.layers = p.dim = p.heads = p.vocab = p.ctx = 0;
  p.batch = 4;
  p.seq = 160;
  p.policy = "every:1";
  p.pipeline_cache_dir = "";
  const std::string plan = "plan qwen3.5-tiny --batch 4 --seq 160 --policy every:1 --json";
  for (const auto& [chunk, expected] :
       {std::pair{REMAT_DELTA_CHUNK_AUTO, 64}, {128, 128}, {0, 160}}) {
    INFO(chunk);
    p.delta_chunk = chunk;
    remat_plan_report r{sizeof(remat_plan_report)};
    REQUIRE(remat_plan(&p, &r) == REMAT_OK);
    CHECK(r.delta_chunk == expected);
    const auto cli = remat::test::run_remat(
        plan + (chunk == REMAT_DELTA_CHUNK_AUTO ? "" : " --delta-chunk " + std::to_string(chunk)));
    INFO(cli.err);
    REQUIRE(cli.exit_code == 0);
    CHECK(remat::test::json_number(cli.out, "chunk") == double(r.delta_chunk));
    CHECK(remat::test::json_number(cli.out, "arena_bytes") == double(r.arena_bytes));
  }
  p.delta_chunk = REMAT_DELTA_CHUNK_AUTO;
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  remat_plan_report made{sizeof(remat_plan_report)};
  REQUIRE(remat_session_plan_report(h.session, &made) == REMAT_OK);
  CHECK(made.delta_chunk == 64);
  // No recurrence: 0, and `remat plan --json` has no delta_rule.
  remat_plan_report gpt{sizeof(remat_plan_report)};
  gpt.delta_chunk = 5;
  const remat_session_params tiny = remat::test::small_params();
  REQUIRE(remat_plan(&tiny, &gpt) == REMAT_OK);
  CHECK(gpt.delta_chunk == 0);
  CHECK(remat::test::json_number(remat::test::run_remat("plan tiny --json").out, "chunk") == -1);
  remat_plan_report full{sizeof(remat_plan_report)}, old{};
  REQUIRE(remat_plan(&p, &full) == REMAT_OK);
  old.struct_size = offsetof(remat_plan_report, delta_chunk);
  old.delta_chunk = 77;  // beyond the struct: never written
  REQUIRE(remat_plan(&p, &old) == REMAT_OK);
  CHECK(old.delta_chunk == 77);
  CHECK(old.arena_bytes == full.arena_bytes);
  CHECK(std::string(old.policy) == full.policy);
  CHECK(old.struct_size == offsetof(remat_plan_report, delta_chunk));
  old.struct_size = sizeof(remat_plan_report) + 8;
  check_error(remat_plan(&p, &old), REMAT_ERROR_INVALID_ARGUMENT, "report->struct_size is");
}

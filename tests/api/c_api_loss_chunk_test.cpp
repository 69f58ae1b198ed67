// The LM head and loss in row chunks through the C API (params->loss_chunk): planning with less
// arena, auto (the default) under an arena cap and under the binding limit as the CLI chooses,
// the values it refuses, LoRA adapters that are the same bits
// with and without chunks, the state that remembers it, sampling refused with a clear message,
// and a params struct from before the field.
#include <catch2/catch.hpp>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "remat/remat.h"
#include "tests/api/api_test_params.h"
#include "tests/support/json_number.h"
#include "tests/support/run_command.h"

using remat::test::Handles;
using remat::test::json_number;
using remat::test::pattern_batch;
using remat::test::small_params;

namespace {

// 128 rows of a 1000-token vocabulary: the logits are most of the arena, and chunks of 64 rows
// halve them.
remat_session_params chunk_params(int32_t loss_chunk) {
  remat_session_params p = small_params();
  p.vocab = 1000;
  p.ctx = 32;
  p.batch = 4;
  p.seq = 32;
  p.loss_chunk = loss_chunk;
  return p;
}

remat_plan_report plan_of(const remat_session_params& p) {
  remat_plan_report r{sizeof(remat_plan_report)};
  REQUIRE(remat_plan(&p, &r) == REMAT_OK);
  return r;
}

// The smallest arena of `p`'s plans, as the error for a budget of 1 byte names it.
uint64_t minimum_arena(remat_session_params p) {
  p.arena_bytes = 1;
  remat_plan_report r{sizeof(remat_plan_report)};
  REQUIRE(remat_plan(&p, &r) == REMAT_ERROR_INVALID_ARGUMENT);
  const std::string e = remat_last_error();
  const std::string key = "the minimum is ";
  const auto at = e.find(key);
  REQUIRE(at != std::string::npos);
  return std::stoull(e.substr(at + key.size()));
}

void require_error(remat_status got, const std::string& needle) {
  CHECK(got == REMAT_ERROR_INVALID_ARGUMENT);
  const std::string e = remat_last_error();
  INFO(e);
  CHECK(e.find(needle) != std::string::npos);
}

std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("c api: loss_chunk defaults to auto, and chunks plan a smaller arena") {
  remat_session_params p;
  REQUIRE(remat_session_params_default(&p) == REMAT_OK);
  CHECK(p.loss_chunk == REMAT_LOSS_CHUNK_AUTO);
  // Auto keeps logits that one binding holds whole: the plan of 0, bit for bit.
  CHECK(plan_of(chunk_params(REMAT_LOSS_CHUNK_AUTO)).arena_bytes ==
        plan_of(chunk_params(0)).arena_bytes);
  const remat_plan_report whole = plan_of(chunk_params(0));
  const remat_plan_report chunked = plan_of(chunk_params(64));
  const uint64_t half_logits = 64ull * 1000 * 4;
  CHECK(chunked.arena_bytes + half_logits <= whole.arena_bytes);
  CHECK(chunked.persistent_bytes == whole.persistent_bytes);
  // At least B*T rows is one chunk, allowed like any multiple of 64.
  CHECK(plan_of(chunk_params(500)).arena_bytes > chunked.arena_bytes);
}

TEST_CASE("c api: loss_chunk -1 chooses for the arena cap, and bad values are refused") {
  const uint64_t whole_min = minimum_arena(chunk_params(0));
  const uint64_t chunked_min = minimum_arena(chunk_params(64));
  REQUIRE(chunked_min < whole_min);
  remat_session_params p = chunk_params(-1);
  p.arena_bytes = whole_min;  // whole logits fit: auto keeps them
  CHECK(plan_of(p).arena_bytes == plan_of([&] {
                                    remat_session_params q = chunk_params(0);
                                    q.arena_bytes = whole_min;
                                    return q;
                                  }())
                                      .arena_bytes);
  p.arena_bytes = whole_min - 1;  // they do not: chunks of 64 rows do
  CHECK(plan_of(p).arena_bytes <= whole_min - 1);
  remat_session_params zero = chunk_params(0);
  zero.arena_bytes = whole_min - 1;
  remat_plan_report r{sizeof(remat_plan_report)};
  CHECK(remat_plan(&zero, &r) == REMAT_ERROR_INVALID_ARGUMENT);
  p.arena_bytes = chunked_min - 1;
  require_error(remat_plan(&p, &r), "below the smallest feasible plan; the minimum is ");

  p.loss_chunk = -2;
  require_error(remat_plan(&p, &r), "params->loss_chunk is -2");
  p.loss_chunk = 32;
  require_error(remat_plan(&p, &r), "params->loss_chunk: loss chunk must be 0");
}

TEST_CASE("c api: LoRA with chunked loss trains the same adapter bits, and cannot sample") {
  const auto dir = remat::test::scratch_dir("loss_chunk");
  std::vector<std::string> adapters;
  for (int32_t chunk : {0, 64}) {
    remat_session_params p = chunk_params(chunk);
    p.lora_rank = 2;
    Handles h;
    REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
    REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
    for (int i = 0; i < 3; ++i) {
      const auto b = pattern_batch(std::size_t(p.batch) * p.seq, 1000, i);
      float loss = -1;
      REQUIRE(remat_session_step(h.session, b.tokens.data(), b.targets.data(), b.tokens.size(),
                                 &loss) == REMAT_OK);
    }
    remat_memory_report m{sizeof(remat_memory_report)};
    REQUIRE(remat_session_memory_report(h.session, &m) == REMAT_OK);
    CHECK(m.device_allocated_bytes == m.planned_total_bytes);
    const std::string out = (dir / ("adapter" + std::to_string(chunk))).string();
    REQUIRE(remat_session_save_adapter(h.session, out.c_str()) == REMAT_OK);
    adapters.push_back(file_bytes(std::filesystem::path(out) / "adapter_model.safetensors"));

    const uint32_t prompt[] = {1, 2, 3};
    uint32_t sampled[4] = {};
    const remat_status s = remat_session_sample(h.session, prompt, 3, 4, 0, 0.0f, sampled, 4);
    if (chunk == 0) {
      CHECK(s == REMAT_OK);
    } else {
      require_error(s, "chunks of 64 rows (params->loss_chunk)");
      require_error(s, "loss_chunk 0");
    }
    if (chunk == 64) {
      // A state of the chunked run gives params that chunk the same way.
      const std::string state = (dir / "state").string();
      REQUIRE(remat_session_save_state(h.session, state.c_str()) == REMAT_OK);
      remat_session_params q;
      REQUIRE(remat_session_params_default(&q) == REMAT_OK);
      REQUIRE(remat_session_params_from_state(&q, state.c_str()) == REMAT_OK);
      CHECK(q.loss_chunk == 64);
    }
  }
  REQUIRE(adapters[0].size() > 100);
  CHECK(adapters[1] == adapters[0]);
  std::filesystem::remove_all(dir);
}

namespace {

// tiny with GPT-2's vocabulary at B = 4, T = 256: [1024, 50257] f32 logits, 205.9 MB, more than
// the 128 MiB binding remat_plan assumes and lavapipe offers; 640 rows bind.
remat_session_params wide_vocab(int32_t loss_chunk) {
  remat_session_params p;
  REQUIRE(remat_session_params_default(&p) == REMAT_OK);
  p.vocab = 50257;
  p.ctx = 256;
  p.batch = 4;
  p.seq = 256;
  p.loss_chunk = loss_chunk;
  return p;
}

}  // namespace

TEST_CASE("c api: auto chunks logits one binding cannot hold, as remat plan and train do") {
  const remat_plan_report chosen = plan_of(wide_vocab(REMAT_LOSS_CHUNK_AUTO));
  CHECK(chosen.arena_bytes == plan_of(wide_vocab(640)).arena_bytes);
  CHECK(chosen.arena_bytes < plan_of(wide_vocab(0)).arena_bytes);
  // The CLI's default plans the same without a device.
  const auto cli =
      remat::test::run_remat("plan tiny --vocab 50257 --ctx 256 --batch 4 --seq 256 --json");
  INFO(cli.err);
  REQUIRE(cli.exit_code == 0);
  CHECK(json_number(cli.out, "loss_chunk") == 640);
  CHECK(json_number(cli.out, "arena_bytes") == double(chosen.arena_bytes));
  // On the device too, with the rows its binding holds (640 at lavapipe's 128 MiB, as remat
  // train picks: tests/cli/loss_chunk_cli_test.cpp); the chunk shows in the sampling refusal.
  const auto devices = remat::test::run_remat("devices --json");
  REQUIRE(devices.exit_code == 0);
  const double limit = json_number(devices.out, "max_storage_buffer_range");
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  remat_session_params p = wide_vocab(REMAT_LOSS_CHUNK_AUTO);
  p.layers = 1;
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  const uint32_t prompt[] = {1, 2, 3};
  uint32_t sampled[4] = {};
  const remat_status s = remat_session_sample(h.session, prompt, 3, 4, 0, 0.0f, sampled, 4);
  if (limit >= 1024.0 * 50257 * 4) {
    CHECK(s == REMAT_OK);
  } else {
    const int rows = int(limit / (50257.0 * 4) / 64) * 64;
    require_error(s, "chunks of " + std::to_string(rows) + " rows (params->loss_chunk)");
  }
}

TEST_CASE("c api: whole logits one binding cannot hold are refused naming loss_chunk") {
  const auto devices = remat::test::run_remat("devices --json");
  REQUIRE(devices.exit_code == 0);
  if (json_number(devices.out, "max_storage_buffer_range") >= 1024.0 * 50257 * 4) return;
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  remat_session_params p = wide_vocab(0);
  p.layers = 1;
  require_error(remat_session_create(h.device, &p, &h.session), "'head.logits'");
  require_error(remat_session_create(h.device, &p, &h.session), "params->loss_chunk -1 or ");
  CHECK(h.session == nullptr);
}

TEST_CASE("c api: a params struct from before loss_chunk plans with whole logits") {
  remat_session_params p = chunk_params(0);
  const remat_plan_report whole = plan_of(p);
  p.loss_chunk = 64;  // beyond the older struct: not read
  p.struct_size = offsetof(remat_session_params, loss_chunk);
  CHECK(plan_of(p).arena_bytes == whole.arena_bytes);
  p.struct_size = offsetof(remat_session_params, loss_chunk) + 1;
  remat_plan_report r{sizeof(remat_plan_report)};
  CHECK(remat_plan(&p, &r) == REMAT_ERROR_INVALID_ARGUMENT);
}

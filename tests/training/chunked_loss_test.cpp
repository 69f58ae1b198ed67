// Training with the LM head and loss in row chunks (graph/lm_head.h). At a fixed chunk size the
// central guarantee holds: byte-identical weights under every policy and arena. Across chunk
// sizes the per-row losses are the same bits (rows are independent), while the head weight's
// gradient sums its rows chunk by chunk, another float order than one sum over all rows: there
// the runs agree within rounding. With LoRA the head's weight is frozen, no dW exists, and the
// adapters are byte-identical across chunk sizes (the whole head included) as well.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/ignore_target.h"
#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"
#include "tests/training/policy_run.h"
#include "tests/training/update_difference.h"

using namespace remat;

namespace {

// Odd sizes: B*T = 69 rows, so chunks of 64 rows end in a ragged chunk of 5.
SessionConfig gpt_config(int loss_chunk) {
  SessionConfig c;
  c.model = ModelConfig{3, 48, 3, 101, 32};
  c.shape.batch = 3;
  c.shape.seq = 23;
  c.shape.loss_chunk = loss_chunk;
  c.optimizer.lr = 1e-2;
  c.optimizer.weight_decay = 0.1;
  c.optimizer.grad_clip = 1.0f;
  c.seed = 1234;
  return c;
}

SessionConfig llama_config(int loss_chunk, bool tied) {
  SessionConfig c = gpt_config(loss_chunk);
  ModelConfig& m = c.model;
  m = test::odd_llama(2, tied);
  c.pipeline_cache_dir = std::nullopt;
  return c;
}

using test::Parameters;
using test::worst_update_difference;

// One step of the whole head and one of the chunked head on the same batch: the same loss bits
// (per-row losses, summed on the host in the same order), gradient norms and updates equal
// within rounding of the head weight's gradient sum.
void check_chunked_matches_whole(SessionConfig c, std::vector<uint32_t> targets) {
  const std::size_t n = std::size_t(c.shape.batch) * c.shape.seq * std::max(c.accum, 1);
  const auto tokens = test::random_indices(n, 7, uint32_t(c.model.vocab));
  c.shape.loss_chunk = 0;
  Session whole(test::device(), c);
  const Parameters w0 = whole.parameters();
  c.shape.loss_chunk = 64;
  Session chunked(test::device(), c);
  REQUIRE(chunked.plan().arena_bytes < whole.plan().arena_bytes);
  // evaluate() takes one micro-batch; with everything of it ignored there is nothing to evaluate.
  const std::size_t rows = std::size_t(c.shape.batch) * c.shape.seq;
  const std::span<const uint32_t> t0(targets.data(), rows);
  if (std::any_of(t0.begin(), t0.end(), [](uint32_t t) { return t != kIgnoreTarget; }))
    CHECK(chunked.evaluate(std::span(tokens).first(rows), t0) ==
          whole.evaluate(std::span(tokens).first(rows), t0));
  CHECK(chunked.step(tokens, targets) == whole.step(tokens, targets));
  CHECK(chunked.last_grad_norm() == Approx(whole.last_grad_norm()).epsilon(1e-6));
  const double worst = worst_update_difference(whole.parameters(), chunked.parameters(), w0);
  INFO("worst difference of updates, relative to the tensor's largest update: " << worst);
  CHECK(worst < 1e-5);
  CHECK(chunked.parameters() != w0);
}

SessionConfig with_lora(SessionConfig c) {
  c.lora.rank = 5;
  c.lora.alpha = 7;
  return c;
}

// LoRA's adapters after three steps at each loss chunk: whole logits, chunks of 64 rows (a
// ragged chunk of 5 last), and one chunk of all 69 rows.
void check_lora_chunks_identical(const SessionConfig& c) {
  std::vector<std::vector<std::byte>> adapters;
  std::vector<std::vector<float>> losses;
  for (int chunk : {0, 64, 128}) {
    SessionConfig k = c;
    k.shape.loss_chunk = chunk;
    const test::PolicyRun r = test::train_under(k, "none", std::nullopt);
    adapters.push_back(r.weights);
    losses.push_back(r.losses);
  }
  REQUIRE(adapters[0].size() > 1000);
  CHECK(adapters[1] == adapters[0]);
  CHECK(adapters[2] == adapters[0]);
  CHECK(losses[1] == losses[0]);
  CHECK(losses[2] == losses[0]);
}

std::vector<uint32_t> random_targets(const SessionConfig& c) {
  return test::random_indices(std::size_t(c.shape.batch) * c.shape.seq * std::max(c.accum, 1), 8,
                              uint32_t(c.model.vocab));
}

}  // namespace

TEST_CASE("chunked loss: GPT-2 weights are byte-identical across policies and arenas") {
  test::check_all_policies_identical(gpt_config(64));
}

TEST_CASE("chunked loss: Llama weights are byte-identical across policies and arenas") {
  test::check_all_policies_identical(llama_config(64, false));
}

TEST_CASE("chunked loss: tied Llama weights are byte-identical across policies and arenas") {
  test::check_all_policies_identical(llama_config(64, true));
}

TEST_CASE("chunked loss with LoRA: GPT-2 adapters are byte-identical across policies and arenas") {
  test::check_all_policies_identical(with_lora(gpt_config(64)));
}

TEST_CASE("chunked loss with LoRA: Llama adapters are byte-identical across policies and arenas") {
  test::check_all_policies_identical(with_lora(llama_config(64, false)));
  test::check_all_policies_identical(with_lora(llama_config(64, true)));
}

TEST_CASE("chunked loss with LoRA: adapters are byte-identical across chunk sizes") {
  check_lora_chunks_identical(with_lora(gpt_config(64)));
  check_lora_chunks_identical(with_lora(llama_config(64, false)));
  check_lora_chunks_identical(with_lora(llama_config(64, true)));
}

TEST_CASE("chunked loss with LoRA: nothing of the frozen head's gradient is allocated") {
  SessionConfig c = with_lora(gpt_config(64));
  Session chunked(test::device(), c);
  c.shape.loss_chunk = 0;
  Session whole(test::device(), c);
  // At this vocabulary the logits are too small for chunks to save arena; persistent memory
  // (no dW of wte, which the unchunked frozen head does not have either) is what is checked.
  CHECK(chunked.plan().persistent_bytes == whole.plan().persistent_bytes);
  for (const PlannedTensor& t : chunked.plan().tensors)
    CHECK(t.tensor.name.rfind("grad.wte", 0) == std::string::npos);
}

TEST_CASE("chunked loss: the same losses as the whole head, updates within rounding") {
  check_chunked_matches_whole(gpt_config(64), random_targets(gpt_config(64)));
  check_chunked_matches_whole(llama_config(64, false), random_targets(llama_config(64, false)));
  check_chunked_matches_whole(llama_config(64, true), random_targets(llama_config(64, true)));
}

TEST_CASE("chunked loss: accumulated micro-batches add every chunk's dW") {
  SessionConfig c = gpt_config(64);
  c.accum = 2;
  check_chunked_matches_whole(c, random_targets(c));
}

TEST_CASE("chunked loss: ignored targets are skipped, a wholly ignored chunk included") {
  const SessionConfig c = gpt_config(64);
  std::vector<uint32_t> targets = random_targets(c);
  // The first chunk (rows 0..63) keeps 3 targets; the ragged chunk (64..68) none.
  for (std::size_t i = 0; i < targets.size(); ++i)
    if (i != 3 && i != 30 && i != 63) targets[i] = kIgnoreTarget;
  check_chunked_matches_whole(c, targets);
  check_chunked_matches_whole(llama_config(64, true), [&] {
    std::vector<uint32_t> t = random_targets(llama_config(64, true));
    for (std::size_t i = 0; i < 64; ++i) t[i] = kIgnoreTarget;
    return t;
  }());
}

TEST_CASE("chunked loss: sampling, which needs whole logits, is refused") {
  Session s(test::device(), gpt_config(64));
  const std::vector<uint32_t> prompt = {1, 2, 3};
  CHECK_THROWS_AS(s.sample(prompt, 2, 0, 1.0f, 0), std::invalid_argument);
}

TEST_CASE("chunked loss: a session left to choose chunks logits one binding cannot hold") {
  // 69 rows of a 400-token vocabulary: 110,400 bytes of logits against a 102,400-byte binding,
  // which holds 64 rows; every other tensor of the step fits it.
  SessionConfig c = gpt_config(0);
  c.model = ModelConfig{1, 16, 2, 400, 32};
  c.max_binding_bytes = 64 * 400 * 4;
  REQUIRE_THROWS_WITH(Session(test::device(), c),
                      Catch::Contains("'head.logits'") &&
                          Catch::Contains("use --loss-chunk auto, or a chunk of at most 64 rows"));
  c.choose_loss_chunk = true;
  Session chosen(test::device(), c);
  CHECK(chosen.config().shape.loss_chunk == 64);
  SessionConfig given = c;
  given.choose_loss_chunk = false;
  given.shape.loss_chunk = 64;
  Session fixed(test::device(), given);
  const auto tokens = test::random_indices(69, 7, 400);
  const auto targets = test::random_indices(69, 8, 400);
  CHECK(chosen.step(tokens, targets) == fixed.step(tokens, targets));
  CHECK(chosen.parameters() == fixed.parameters());
  // Where the device binds the whole logits, a chosen chunk is none.
  c.max_binding_bytes = 0;
  CHECK(Session(test::device(), c).config().shape.loss_chunk == 0);
}

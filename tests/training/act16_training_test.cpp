// Training with activations stored as f16 or bf16 (TrainShape::activation_dtype). A recompute
// runs the same kernels on the same 16-bit inputs, so it writes the same 16-bit values: within
// one dtype the central guarantee holds, byte-identical weights under every policy and arena,
// and the device holds exactly what the plan says (policy_run.h checks both).
#include <catch2/catch.hpp>

#include <cmath>

#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"
#include "tests/training/policy_run.h"

using namespace remat;

namespace {

// Odd sizes everywhere: L=3, C=48, 3 heads, V=101, T=23, B=3 (B*T = 69 rows).
SessionConfig gpt_config(DType act, float dropout) {
  SessionConfig c = test::odd_gpt2_session();
  c.shape.dropout = dropout;
  c.shape.activation_dtype = act;
  return c;
}

SessionConfig llama_config(DType act) {
  SessionConfig c = gpt_config(act, 0.0f);
  c.model = test::odd_llama(2, false);
  c.model.qkv_bias = true;
  return c;
}

// One step's loss on a fixed batch.
float first_loss(const SessionConfig& c) {
  Session s(test::device(), c);
  const std::size_t n = std::size_t(c.shape.batch) * c.shape.seq;
  return s.step(test::random_indices(n, 100, uint32_t(c.model.vocab)),
                test::random_indices(n, 200, uint32_t(c.model.vocab)));
}

}  // namespace

TEST_CASE("act16: GPT-2 with dropout, bf16 activations: byte-identical across policies") {
  test::check_all_policies_identical(gpt_config(DType::bf16, 0.1f));
}

TEST_CASE("act16: GPT-2 with dropout, f16 activations: byte-identical across policies") {
  test::check_all_policies_identical(gpt_config(DType::f16, 0.1f));
}

TEST_CASE("act16: GPT-2 with the chunked loss, bf16: byte-identical across policies") {
  SessionConfig c = gpt_config(DType::bf16, 0.0f);
  c.shape.loss_chunk = 64;
  test::check_all_policies_identical(c);
}

TEST_CASE("act16: GPT-2 with LoRA, bf16: byte-identical losses and weights across policies") {
  SessionConfig c = gpt_config(DType::bf16, 0.1f);
  c.lora.rank = 5;
  c.lora.alpha = 7;
  c.lora.targets = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};
  const test::PolicyRun base = test::check_all_policies_identical(c);
  // Three steps moved the adapters: the later losses differ from the first.
  CHECK(base.losses[2] != base.losses[0]);
}

TEST_CASE("act16: Llama (GQA, RoPE, SwiGLU, RMSNorm) in bf16 and f16: byte-identical") {
  for (DType t : {DType::bf16, DType::f16}) DYNAMIC_SECTION(dtype_name(t)) {
      test::check_all_policies_identical(llama_config(t));
    }
}

// Gemma 3's kernels in 16 bits: the scaled embedding, (1 + w) norms, GeGLU, a sliding window of
// 5 on the local layers (0 and 2) and a score scale of 20^-1/2.
TEST_CASE("act16: Gemma 3 in bf16 and f16: byte-identical, its loss near the f32 one") {
  auto gemma = [](DType t) {
    SessionConfig c = gpt_config(t, 0.0f);
    c.model = test::odd_llama(3, true);
    c.model.qk_norm = true;
    c.model.head_size = 16;
    c.model.gemma3 = true;
    c.model.gemma = {5, 2, 10000.0f, 20.0f};
    return c;
  };
  const float l32 = first_loss(gemma(DType::f32));
  for (DType t : {DType::bf16, DType::f16}) DYNAMIC_SECTION(dtype_name(t)) {
      test::check_all_policies_identical(gemma(t));
      const float l = first_loss(gemma(t));
      CHECK(l != l32);
      CHECK(std::abs(l - l32) < 4e-3 * l32);
    }
}

TEST_CASE("act16: the chunked head rounds its logits as a stored logits tensor is rounded") {
  // Rows are independent: per-row losses, and so the step's loss, are the whole head's bits.
  for (DType t : {DType::bf16, DType::f16}) {
    DYNAMIC_SECTION(dtype_name(t)) {
      SessionConfig c = gpt_config(t, 0.0f);
      const float whole = first_loss(c);
      c.shape.loss_chunk = 64;
      CHECK(first_loss(c) == whole);
    }
  }
}

TEST_CASE("act16: 16-bit storage changes the loss a little and halves the activations' arena") {
  const SessionConfig f32 = gpt_config(DType::f32, 0.0f);
  const float l32 = first_loss(f32);
  for (DType t : {DType::bf16, DType::f16}) {
    DYNAMIC_SECTION(dtype_name(t)) {
      const SessionConfig c = gpt_config(t, 0.0f);
      const float l = first_loss(c);
      // The loss of a random model is about log(101) = 4.6; rounding the activations moves it
      // (else nothing was stored in 16 bits) by far less than bf16's 2^-8 relative.
      CHECK(l != l32);
      CHECK(std::abs(l - l32) < 4e-3 * l32);
      Session s(test::device(), c), s32(test::device(), f32);
      CHECK(s.plan().arena_bytes < s32.plan().arena_bytes * 3 / 4);
      CHECK(s.plan().arena_bytes > s32.plan().arena_bytes / 4);
    }
  }
}

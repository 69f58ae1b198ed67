// Whole training steps with every residual that adds a matmul's output fused into that matmul
// (TrainShape::fuse_residuals, the default; graph/residual_fusion.h) against the graph that keeps
// the residual ops: the same losses, gradient norms and parameters bit for bit. Covers the texel
// matmul that adds the residual before its store (GPT-2's Conv1D projections) and the kernels
// that add it in place afterwards (the Llama family's nn.Linear projections, LoRA's merges,
// 16-bit activations), with gradient accumulation and under checkpointing.
#include <catch2/catch.hpp>

#include "runtime/session.h"
#include "tests/support/test_device.h"
#include "tests/training/policy_run.h"
#include "tests/training/steps_run.h"

using namespace remat;

namespace {

test::StepsRun train(SessionConfig c, bool fused) {
  c.shape.fuse_residuals = fused;
  return test::train_three_steps(c, 900, 1000);
}

SessionConfig odd_llama() {
  SessionConfig c = test::odd_gpt2_session();
  c.model = ModelConfig::preset("llama-tiny");
  c.model.layers = 2;
  return c;
}

}  // namespace

TEST_CASE("residuals fused into their matmuls train to the unfused graph's bits") {
  struct Case {
    const char* name;
    SessionConfig config;
    std::size_t fused_per_pass;  // residual dispatches the texel matmul absorbs (GPT-2 only)
  };
  std::vector<Case> cases;
  cases.push_back({"gpt2", test::odd_gpt2_session(), 6});
  SessionConfig accum = test::odd_gpt2_session();
  accum.accum = 2;
  cases.push_back({"gpt2, two micro-batches", accum, 12});
  SessionConfig every = test::odd_gpt2_session();
  every.policy = Policy::parse("every:1");
  // The recompute reruns each block up to its attention residual (the block's output, the MLP
  // residual, is kept): 6 + 3.
  cases.push_back({"gpt2, every block recomputed", every, 9});
  SessionConfig half = test::odd_gpt2_session();
  half.shape.activation_dtype = DType::f16;
  cases.push_back({"gpt2, f16 activations (added in place)", half, 0});
  cases.push_back({"llama (added in place)", odd_llama(), 0});
  SessionConfig lora = test::odd_gpt2_session();
  lora.lora.rank = 4;
  lora.lora.alpha = 4;  // scale 1: the adapters' merges fuse too
  cases.push_back({"gpt2 LoRA, merge scale 1 (added in place)", lora, 0});
  for (const Case& k : cases) {
    DYNAMIC_SECTION(k.name) {
      const test::StepsRun want = train(k.config, false), got = train(k.config, true);
      test::require_same_steps(got, want);
      if (test::device().plan().quirks.texel_fetch_beats_storage_loads)
        REQUIRE(got.dispatches + k.fused_per_pass == want.dispatches);
      else
        REQUIRE(got.dispatches == want.dispatches);
    }
  }
}

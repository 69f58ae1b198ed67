// LoRA on a frozen base stored in f16/bf16 (TrainShape::weight_dtype) end to end on the device:
// adapters byte-identical under every policy and arena, the device holding exactly the planned
// bytes, and the same bits as an f32 base holding the rounded values (the kernels widen in
// registers and compute in fp32), for GPT-2 and the Llama family at odd sizes, and for GPT-2 with
// bf16 activations as well (whole and chunked loss). Seeded and loaded weights are rounded to
// nearest even; a file in the stored dtype is copied exactly.
#include <catch2/catch.hpp>

#include <cstring>

#include "base/half_float.h"
#include "formats/peft_adapter.h"
#include "formats/safetensors.h"
#include "runtime/session.h"
#include "runtime/session_files.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"
#include "tests/training/policy_run.h"

using namespace remat;

namespace {

// GPT-2 at L3 C48 3 heads V101, T23 B3, as the f32 LoRA bit-identity test.
SessionConfig gpt2_config(DType weights) {
  SessionConfig c = test::odd_gpt2_session();
  c.shape.weight_dtype = weights;
  c.lora.rank = 5;
  c.lora.alpha = 7;
  c.pipeline_cache_dir = std::nullopt;
  return c;
}

// llama-tiny at odd sizes: L3 C48, 6 query heads sharing 2 key/value heads, MLP 80, V300,
// untied head; every linear layer a target.
SessionConfig llama_config(DType weights) {
  SessionConfig c = gpt2_config(weights);
  ModelConfig& m = c.model;
  m = test::odd_llama(3, false);
  return c;
}

std::vector<uint32_t> ids(const SessionConfig& c, uint64_t seed) {
  return test::random_indices(std::size_t(c.shape.batch) * c.shape.seq, seed,
                              uint32_t(c.model.vocab));
}

struct Run {
  std::vector<std::byte> adapter;  // adapter_model.safetensors, byte for byte
  std::vector<float> losses;
  uint64_t arena = 0;
};

// Three AdamW steps.
Run train(Session& s) {
  Run r;
  r.arena = s.plan().arena_bytes;
  for (uint32_t step = 0; step < 3; ++step)
    r.losses.push_back(s.step(ids(s.config(), 100 + step), ids(s.config(), 200 + step)));
  test::TempFolder dir("weight16_bitid");
  save_adapter(s, dir.path(), "");
  r.adapter = test::read_bytes(dir / "adapter_model.safetensors");
  return r;
}

Run train(SessionConfig c, const std::string& policy, std::optional<uint64_t> arena) {
  c.policy = Policy::parse(policy);
  c.arena_budget = arena;
  Session s(test::device(), c);
  // The only session on the device: the device's bytes must be the plan's.
  const MemoryReport m = s.memory();
  CHECK(m.device_bytes_allocated == m.planned_total_bytes);
  return train(s);
}

// Trains under none, then every other policy and auto arena, each in its own section; returns
// none's run.
Run check_policies(const SessionConfig& c) {
  const Run base = train(c, "none", std::nullopt);
  REQUIRE(base.adapter.size() > 1000);
  const uint64_t minimum =
      minimum_arena_bytes(c.model, c.shape, session_alignment(test::device()), nullptr, c.lora);
  REQUIRE(minimum < base.arena);
  struct Case {
    std::string policy;
    std::optional<uint64_t> arena;
  };
  const std::vector<Case> cases = {
      {"every:1", {}},   {"every:2", {}},   {"sqrt", {}},
      {"selective", {}}, {"auto", minimum}, {"auto", minimum + (base.arena - minimum) / 2}};
  for (const auto& k : cases) {
    DYNAMIC_SECTION(k.policy << " arena " << (k.arena ? std::to_string(*k.arena) : "-")) {
      const Run r = train(c, k.policy, k.arena);
      if (k.arena) CHECK(r.arena <= *k.arena);
      CHECK(r.losses == base.losses);
      CHECK(r.adapter == base.adapter);
    }
  }
  return base;
}

float rounded(float v, DType t) {
  return t == DType::f16 ? f16_to_float(float_to_f16(v)) : bf16_to_float(float_to_bf16(v));
}

}  // namespace

TEST_CASE("weights dtype: GPT-2 LoRA adapters are byte-identical across policies and arenas") {
  for (DType t : {DType::bf16, DType::f16}) DYNAMIC_SECTION(dtype_name(t)) {
      check_policies(gpt2_config(t));
    }
}

TEST_CASE("weights dtype with bf16 activations: adapters byte-identical across policies, chunks") {
  // Both at once: the matmuls, the embedding and the chunked head read a bf16 weight and a bf16
  // activation (kernel_variants' combined rows).
  SessionConfig c = gpt2_config(DType::bf16);
  c.shape.activation_dtype = DType::bf16;
  const Run whole = check_policies(c);
  // The frozen head makes dx the only head gradient, and the chunked head rounds each chunk's
  // logits as the stored logits are rounded: the chunked runs (69 rows in chunks of 64) give the
  // whole-logits adapters, under recomputation too.
  c.shape.loss_chunk = 64;
  for (const char* policy : {"none", "selective", "every:1"})
    DYNAMIC_SECTION("chunked " << policy) {
      const Run r = train(c, policy, std::nullopt);
      CHECK(r.losses == whole.losses);
      CHECK(r.adapter == whole.adapter);
    }
  // 16-bit activations take less arena than fp32 ones on the same base, and train differently.
  c.shape.loss_chunk = 0;
  c.shape.activation_dtype = DType::f32;
  const Run f32 = train(c, "none", std::nullopt);
  CHECK(whole.arena < f32.arena);
  CHECK(whole.losses != f32.losses);
}

TEST_CASE("weights dtype: Llama LoRA adapters are byte-identical across policies and arenas") {
  for (DType t : {DType::bf16, DType::f16}) DYNAMIC_SECTION(dtype_name(t)) {
      check_policies(llama_config(t));
    }
}

TEST_CASE("weights dtype: seeded weights are rounded, and train as an f32 base of those values") {
  for (bool llama : {false, true})
    for (DType t : {DType::bf16, DType::f16}) {
      DYNAMIC_SECTION((llama ? "llama " : "gpt2 ") << dtype_name(t)) {
        const SessionConfig c16 = llama ? llama_config(t) : gpt2_config(t);
        SessionConfig c32 = c16;
        c32.shape.weight_dtype = DType::f32;
        Session s16(test::device(), c16);
        test::TempFolder dir("weight16_base");
        Run got;
        {
          // Seeded values: the f32 session's, each rounded; 1-D tensors untouched.
          Session s32(test::device(), c32);
          int narrowed = 0;
          for (TensorId id : s16.plan().frozen) {
            const Tensor& w = s16.plan().tensors.at(std::size_t(id)).tensor;
            const std::vector<float> a = s16.values(id), b = s32.values(id);
            REQUIRE(a.size() == b.size());
            const bool two_d = w.shape.size() >= 2;
            REQUIRE(w.dtype == (two_d ? t : DType::f32));
            narrowed += two_d;
            for (std::size_t i = 0; i < a.size(); ++i)
              REQUIRE(a[i] == (two_d ? rounded(b[i], t) : b[i]));
          }
          REQUIRE(narrowed > 0);
          // The f32 session holding the 16-bit one's (widened) values trains to the same bits.
          s16.save(dir / "base.safetensors");
          s32.load(dir / "base.safetensors");
          const Run want = train(s32);
          got = train(s16);
          CHECK(got.losses == want.losses);
          CHECK(got.adapter == want.adapter);
        }
        // An f32 base that is not rounded trains differently: the storage is really 16 bits.
        Session plain(test::device(), c32);
        CHECK(train(plain).adapter != got.adapter);
      }
    }
}

TEST_CASE("weights dtype: loading rounds F32 values and copies F16/BF16 files of the dtype") {
  for (DType t : {DType::bf16, DType::f16}) {
    DYNAMIC_SECTION(dtype_name(t)) {
      SessionConfig c = gpt2_config(t);
      SessionConfig c32 = c;
      c32.shape.weight_dtype = DType::f32;
      c32.seed = 99;  // other values than the 16-bit session's seeded ones
      test::TempFolder dir("weight16_load");
      Session src(test::device(), c32);
      src.save(dir / "f32.safetensors");
      Session s(test::device(), c);
      s.load(dir / "f32.safetensors");
      for (TensorId id : s.plan().frozen) {
        const bool two_d = s.plan().tensors.at(std::size_t(id)).tensor.shape.size() >= 2;
        const std::vector<float> got = s.values(id), want = src.values(id);
        for (std::size_t i = 0; i < got.size(); ++i)
          REQUIRE(got[i] == (two_d ? rounded(want[i], t) : want[i]));
      }
      // Saved (widened to F32) and loaded again: the same bits, nothing rounded twice.
      s.save(dir / "again.safetensors");
      Session s2(test::device(), c);
      s2.load(dir / "again.safetensors");
      for (TensorId id : s.plan().frozen) REQUIRE(s2.values(id) == s.values(id));
    }
  }
}

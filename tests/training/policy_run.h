// Training a few steps under one checkpoint policy and arena, for the bit-identity tests: the
// saved weights (under LoRA, the saved adapters) byte for byte, the losses, and the arena the plan
// took. Every run also checks that the device holds exactly the bytes the plan says.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "formats/peft_adapter.h"
#include "runtime/session.h"
#include "runtime/session_files.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"

namespace remat::test {

struct PolicyRun {
  std::vector<std::byte> weights;  // the saved safetensors file (LoRA: adapter_model), as bytes
  std::vector<float> losses;       // one per step
  uint64_t arena = 0;              // the plan's arena bytes
};

// A Llama-family model of odd sizes (no tile multiple): C48, 6 query heads of 8 sharing 2
// key/value heads, MLP 80, vocabulary 300, ctx 32.
inline ModelConfig odd_llama(int layers, bool tied_head) {
  ModelConfig m = ModelConfig::preset("llama-tiny");
  m.layers = layers;
  m.dim = 48;
  m.heads = 6;
  m.kv_heads = 2;
  m.ffn = 80;
  m.vocab = 300;
  m.ctx = 32;
  m.tied_head = tied_head;
  return m;
}

// GPT-2 of odd sizes everywhere (L3 C48, 3 heads, V101, T23, B3: 69 rows, no tile multiple),
// with the AdamW settings and seed the bit-identity tests share.
inline SessionConfig odd_gpt2_session() {
  SessionConfig c;
  c.model = ModelConfig{3, 48, 3, 101, 32};
  c.shape.batch = 3;
  c.shape.seq = 23;
  c.optimizer.lr = 1e-2;
  c.optimizer.weight_decay = 0.1;
  c.optimizer.grad_clip = 1.0f;
  c.seed = 1234;
  return c;
}

// Three AdamW steps on seeded random tokens and targets.
inline PolicyRun train_under(SessionConfig c, const std::string& policy,
                             std::optional<uint64_t> arena) {
  c.policy = Policy::parse(policy);
  c.arena_budget = arena;
  Session s(device(), c);
  PolicyRun r;
  r.arena = s.plan().arena_bytes;
  const std::size_t n = std::size_t(c.shape.batch) * c.shape.seq;
  for (uint32_t step = 0; step < 3; ++step) {
    auto tokens = random_indices(n, 100 + step, uint32_t(c.model.vocab));
    auto targets = random_indices(n, 200 + step, uint32_t(c.model.vocab));
    r.losses.push_back(s.step(tokens, targets));
  }
  const MemoryReport m = s.memory();
  CHECK(m.device_bytes_allocated == m.planned_total_bytes);
  TempFolder d("policy_run");
  if (c.lora.enabled()) {
    save_adapter(s, d.path(), "");
    r.weights = read_bytes(d / "adapter_model.safetensors");
  } else {
    s.save(d / "w.safetensors");
    r.weights = read_bytes(d / "w.safetensors");
  }
  return r;
}

// Trains under none, then under every:1, every:2, sqrt, selective and auto at the minimum arena,
// half-way and the no-recompute arena, each in its own section: losses and saved weights must be
// byte-identical to none's. Returns none's run.
inline PolicyRun check_all_policies_identical(const SessionConfig& c) {
  const PolicyRun base = train_under(c, "none", std::nullopt);
  REQUIRE(base.weights.size() > 1000);
  for (float l : base.losses) REQUIRE(std::isfinite(l));
  const uint64_t minimum =
      minimum_arena_bytes(c.model, c.shape, session_alignment(device()), nullptr, c.lora);
  struct Case {
    std::string policy;
    std::optional<uint64_t> arena;
  };
  const std::vector<Case> cases = {
      {"every:1", {}},     {"every:2", {}},   {"sqrt", {}},
      {"selective", {}},   {"auto", minimum}, {"auto", minimum + (base.arena - minimum) / 2},
      {"auto", base.arena}};
  for (const auto& k : cases) {
    DYNAMIC_SECTION(k.policy << " arena " << (k.arena ? std::to_string(*k.arena) : "-")) {
      const PolicyRun r = train_under(c, k.policy, k.arena);
      if (k.arena) CHECK(r.arena <= *k.arena);
      CHECK(r.losses == base.losses);
      CHECK(r.weights == base.weights);
    }
  }
  return base;
}

}  // namespace remat::test

// The central guarantee: checkpointing changes memory and time, never results. The same seed,
// data and steps under every policy and arena give byte-identical weights.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// Odd sizes everywhere (no tile multiple): L=3, C=48, 3 heads, V=101, T=23, B=3.
SessionConfig odd_config(float dropout) {
  SessionConfig c;
  c.model = ModelConfig{3, 48, 3, 101, 32};
  c.shape.batch = 3;
  c.shape.seq = 23;
  c.shape.dropout = dropout;
  c.optimizer.lr = 1e-2;
  c.optimizer.weight_decay = 0.1;
  c.optimizer.grad_clip = 1.0f;
  c.seed = 1234;
  return c;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Run {
  std::string weights;  // the saved safetensors file, byte for byte
  std::vector<float> losses;
  uint64_t arena = 0;
};

Run train(SessionConfig c, const std::string& policy, std::optional<uint64_t> arena) {
  c.policy = Policy::parse(policy);
  c.arena_budget = arena;
  Session s(test::device(), c);
  Run r;
  r.arena = s.plan().arena_bytes;
  const size_t n = size_t(c.shape.batch) * c.shape.seq;
  for (uint32_t step = 0; step < 3; ++step) {
    auto tokens = test::random_indices(n, 100 + step, uint32_t(c.model.vocab));
    auto targets = test::random_indices(n, 200 + step, uint32_t(c.model.vocab));
    r.losses.push_back(s.step(tokens, targets));
  }
  const auto path = std::filesystem::temp_directory_path() /
                    ("remat_bitid_" + std::to_string(::getpid()) + ".safetensors");
  s.save(path);
  r.weights = read_file(path);
  std::filesystem::remove(path);
  return r;
}

void check_all_policies_identical(float dropout) {
  SessionConfig c = odd_config(dropout);
  const Run base = train(c, "none", std::nullopt);
  REQUIRE(base.weights.size() > 1000);
  for (float l : base.losses) REQUIRE(std::isfinite(l));

  const uint64_t minimum = minimum_arena_bytes(c.model, c.shape, session_alignment(test::device()));
  struct Case {
    std::string policy;
    std::optional<uint64_t> arena;
  };
  std::vector<Case> cases = {{"every:1", {}},     {"every:2", {}},
                             {"sqrt", {}},        {"selective", {}},
                             {"auto", minimum},   {"auto", minimum + (base.arena - minimum) / 2},
                             {"auto", base.arena}};
  for (const auto& k : cases) {
    DYNAMIC_SECTION(k.policy << " arena " << (k.arena ? std::to_string(*k.arena) : "-")
                             << " dropout " << dropout) {
      const Run r = train(c, k.policy, k.arena);
      if (k.arena) CHECK(r.arena <= *k.arena);
      CHECK(r.losses == base.losses);
      CHECK(r.weights == base.weights);
    }
  }
}

}  // namespace

TEST_CASE("weights are byte-identical across policies and arenas after 3 AdamW steps") {
  check_all_policies_identical(0.0f);
}

TEST_CASE("with dropout 0.1, recomputed masks keep weights byte-identical across policies") {
  check_all_policies_identical(0.1f);
}

TEST_CASE("the minimum arena really forces recomputation") {
  SessionConfig c = odd_config(0.0f);
  c.policy = Policy::parse("auto");
  c.arena_budget = minimum_arena_bytes(c.model, c.shape, session_alignment(test::device()));
  Session s(test::device(), c);
  CHECK(s.plan().report.recompute_flops > 0);
  c.policy = Policy::parse("none");
  c.arena_budget.reset();
  Session none(test::device(), c);
  CHECK(none.plan().arena_bytes > s.plan().arena_bytes);
}

// Qwen3.5 trains: Gated DeltaNet and gated attention layers lowered end to end. The loss falls,
// and the losses and every weight after a few AdamW steps are the same bits whatever the
// checkpoint plan and the delta rule's chunk length (docs/DESIGN.md, "The delta rule under the
// planner"), tied head or untied.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// Odd sizes: C 48, 2 query heads of 16 on 1 KV head (a quarter rotated), MLP 80, vocabulary 101;
// three Gated DeltaNet layers of 2 key heads shared by 4 value heads, dk 8 and dv 12, then one
// gated attention layer. B 2, T 150: two whole 64-token blocks of the chunkwise delta rule and a
// part one.
SessionConfig odd_qwen35(bool tied) {
  SessionConfig c;
  ModelConfig& m = c.model;
  m = ModelConfig::preset("qwen3.5-tiny");
  m.dim = 48;
  m.heads = 2;
  m.kv_heads = 1;
  m.head_size = 16;
  m.ffn = 80;
  m.vocab = 101;
  m.ctx = 160;
  m.tied_head = tied;
  m.qwen35_layers = {4, 2, 4, 8, 12, 4, 0.25f, 0, {1, 1, 0}, true};
  c.shape.batch = 2;
  c.shape.seq = 150;
  c.optimizer.lr = 1e-2;
  c.optimizer.weight_decay = 0.1;
  c.optimizer.grad_clip = 1.0f;
  c.seed = 1234;
  return c;
}

struct Run {
  std::vector<float> losses;
  std::vector<std::vector<float>> weights;  // every parameter after the last step
  uint64_t arena = 0;
  double recompute_flops = 0;
};

// `steps` AdamW steps on seeded random tokens and targets (the same batch each step when
// `repeat`).
Run train(SessionConfig c, const std::string& policy, std::optional<uint64_t> arena,
          int delta_chunk, int steps = 3, bool repeat = false) {
  c.policy = Policy::parse(policy);
  c.arena_budget = arena;
  c.shape.delta_chunk = delta_chunk;
  Session s(test::device(), c);
  Run r;
  r.arena = s.plan().arena_bytes;
  r.recompute_flops = s.plan().report.recompute_flops;
  const std::size_t n = std::size_t(c.shape.batch) * c.shape.seq;
  for (int step = 0; step < steps; ++step) {
    const uint64_t seed = repeat ? 0 : uint64_t(step);
    auto tokens = test::random_indices(n, 100 + seed, uint32_t(c.model.vocab));
    auto targets = test::random_indices(n, 200 + seed, uint32_t(c.model.vocab));
    r.losses.push_back(s.step(tokens, targets));
  }
  const MemoryReport m = s.memory();
  CHECK(m.device_bytes_allocated == m.planned_total_bytes);
  for (TensorId p : s.plan().parameters) r.weights.push_back(s.values(p));
  return r;
}

bool same_bytes(const std::vector<std::vector<float>>& a,
                const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t p = 0; p < a.size(); ++p)
    if (a[p].size() != b[p].size() ||
        std::memcmp(a[p].data(), b[p].data(), a[p].size() * sizeof(float)) != 0)
      return false;
  return true;
}

}  // namespace

TEST_CASE("qwen3.5: the loss falls on a repeated batch, tied and untied") {
  for (bool tied : {true, false}) {
    INFO("tied " << tied);
    const Run r = train(odd_qwen35(tied), "none", std::nullopt, 0, 8, true);
    for (float l : r.losses) REQUIRE(std::isfinite(l));
    // A fresh model predicts about uniformly: ln(101) = 4.62.
    CHECK(r.losses.front() == Approx(std::log(101.0)).margin(0.3));
    CHECK(r.losses.back() < r.losses.front() - 0.5f);
  }
}

TEST_CASE("qwen3.5: losses and weights are byte-identical across policies and chunk lengths") {
  for (bool tied : {true, false}) {
    const SessionConfig c = odd_qwen35(tied);
    const Run base = train(c, "none", std::nullopt, 0);
    for (float l : base.losses) REQUIRE(std::isfinite(l));
    // 64 splits T 150 into 64, 64 and 22; 128 into 128 and 22.
    for (int chunk : {0, 64, 128}) {
      TrainShape shape = c.shape;
      shape.delta_chunk = chunk;
      const uint64_t minimum =
          minimum_arena_bytes(c.model, shape, session_alignment(test::device()));
      struct Case {
        std::string policy;
        std::optional<uint64_t> arena;
      };
      for (const Case& k : {Case{"none", {}}, Case{"every:1", {}}, Case{"auto", minimum}}) {
        DYNAMIC_SECTION("tied " << tied << " chunk " << chunk << " " << k.policy) {
          const Run r = train(c, k.policy, k.arena, chunk);
          if (k.arena) {
            CHECK(r.arena <= *k.arena);
            CHECK(r.recompute_flops > 0);
          }
          CHECK(r.losses == base.losses);
          CHECK(same_bytes(r.weights, base.weights));
        }
      }
    }
  }
}

// The backward against the forward: each parameter's largest gradient element against a central
// difference of the evaluated loss. Every Qwen3.5 op's backward lies on some parameter's path
// (the conv weight, A_log and dt_bias, the gated norm, q_norm behind the in-place q and gate,
// in_proj_qkv behind q, k and v read in place), and a misplaced or missing gradient part moves
// that parameter's gradient by far more than the difference's rounding.
TEST_CASE("qwen3.5: every parameter's gradient matches a central difference of the loss") {
  for (int chunk : {0, 64}) {
    SessionConfig c = odd_qwen35(false);
    c.optimizer.lr = 0;  // the step computes gradients and leaves the weights
    c.optimizer.weight_decay = 0;
    c.optimizer.grad_clip = 0;
    c.shape.delta_chunk = chunk;
    Session s(test::device(), c);
    const std::size_t n = std::size_t(c.shape.batch) * c.shape.seq;
    const auto tokens = test::random_indices(n, 100, uint32_t(c.model.vocab));
    const auto targets = test::random_indices(n, 200, uint32_t(c.model.vocab));
    std::vector<std::vector<float>> w;
    for (TensorId p : s.plan().parameters) w.push_back(s.values(p));
    s.step(tokens, targets);
    // Read before any evaluation: setting parameters resets the optimizer state.
    std::vector<std::vector<float>> grads;
    for (TensorId d : s.plan().parameter_grads) grads.push_back(s.values(d));
    double worst = 0;
    for (std::size_t p = 0; p < w.size(); ++p) {
      const std::vector<float>& g = grads[p];
      const std::size_t i =
          std::size_t(std::max_element(g.begin(), g.end(),
                                       [](float a, float b) { return std::abs(a) < std::abs(b); }) -
                      g.begin());
      // A fourth-order stencil: truncation O(h^4) at a step whose loss change float32 resolves.
      const float h = 5e-3f;
      const auto loss_at = [&](float delta) {
        std::vector<std::vector<float>> v = w;
        v[p][i] += delta;
        s.set_trained_parameters(v);
        return double(s.evaluate(tokens, targets));
      };
      const double fd = (8.0 * (loss_at(h) - loss_at(-h)) - (loss_at(2 * h) - loss_at(-2 * h))) /
                        (12.0 * double(h));
      // The difference resolves the loss's float32 rounding (4.8e-7 at ln 101) over the stencil:
      // 18 ulps / 12h, 1.4e-4 absolute; beyond that 5% of the difference.
      const double gap = std::abs(fd - double(g[i])), allowed = 0.05 * std::abs(fd) + 2e-4;
      const std::string name = s.plan().tensors[s.plan().parameters[p]].tensor.name;
      INFO("chunk " << chunk << " " << name << "[" << i << "]: gradient " << g[i]
                    << ", central difference " << fd);
      CHECK(gap <= allowed);
      worst = std::max(worst, gap / allowed);
    }
    std::printf(
        "qwen3.5 chunk %d: worst gap gradient vs central difference %.2f of the allowed "
        "over %zu parameters\n",
        chunk, worst, w.size());
  }
}

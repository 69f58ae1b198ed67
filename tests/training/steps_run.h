// Three training steps on seeded random tokens, for the tests that compare two ways of running
// the same step (fused against separate dispatches) bit for bit: losses, gradient norms, weights.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

namespace remat::test {

struct StepsRun {
  std::vector<float> losses, norms;
  std::vector<std::pair<std::string, std::vector<float>>> weights;
  std::size_t dispatches = 0;
  MemoryReport memory;
};

// Step s draws its tokens from seed token_seed + s and its targets from target_seed + s.
inline StepsRun train_three_steps(const SessionConfig& c, uint32_t token_seed,
                                  uint32_t target_seed) {
  Session s(device(), c);
  StepsRun r;
  r.dispatches = s.dispatch_count();
  const std::size_t n = std::size_t(c.shape.batch) * c.shape.seq * std::max(c.accum, 1);
  for (uint32_t step = 0; step < 3; ++step) {
    const auto tokens = random_indices(n, token_seed + step, uint32_t(c.model.vocab));
    const auto targets = random_indices(n, target_seed + step, uint32_t(c.model.vocab));
    r.losses.push_back(s.step(tokens, targets));
    r.norms.push_back(s.last_grad_norm());
  }
  r.weights = s.parameters();
  r.memory = s.memory();
  return r;
}

inline bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Both runs trained (finite losses) to the same losses, gradient norms and weights, bit for bit.
inline void require_same_steps(const StepsRun& got, const StepsRun& want) {
  for (float l : want.losses) REQUIRE(std::isfinite(l));
  REQUIRE(same_floats(got.losses, want.losses));
  REQUIRE(same_floats(got.norms, want.norms));
  REQUIRE(got.weights.size() == want.weights.size());
  for (std::size_t i = 0; i < want.weights.size(); ++i) {
    INFO(want.weights[i].first);
    REQUIRE(got.weights[i].first == want.weights[i].first);
    REQUIRE(same_floats(got.weights[i].second, want.weights[i].second));
  }
}

}  // namespace remat::test

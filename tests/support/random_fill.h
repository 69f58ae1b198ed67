// Deterministic pseudo-random test data (same values on every machine and run).
#pragma once

#include <cstdint>
#include <vector>

namespace remat::test {

// Uniform floats in [lo, hi) from a fixed-seed generator.
std::vector<float> random_floats(std::size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);
std::vector<double> random_doubles(std::size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0);
// Uniform integers in [0, bound).
std::vector<uint32_t> random_indices(std::size_t n, uint64_t seed, uint32_t bound);

}  // namespace remat::test

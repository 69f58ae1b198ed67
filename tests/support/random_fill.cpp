#include "tests/support/random_fill.h"

namespace remat::test {

namespace {
// splitmix64: tiny, well-mixed, and identical everywhere (std distributions are not).
uint64_t next(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double unit(uint64_t& s) { return double(next(s) >> 11) * (1.0 / 9007199254740992.0); }
}  // namespace

std::vector<float> random_floats(std::size_t n, uint64_t seed, float lo, float hi) {
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(lo + (hi - lo) * unit(seed));
  return v;
}

std::vector<double> random_doubles(std::size_t n, uint64_t seed, double lo, double hi) {
  std::vector<double> v(n);
  for (auto& x : v) x = lo + (hi - lo) * unit(seed);
  return v;
}

std::vector<uint32_t> random_indices(std::size_t n, uint64_t seed, uint32_t bound) {
  std::vector<uint32_t> v(n);
  for (auto& x : v) x = static_cast<uint32_t>(next(seed) % bound);
  return v;
}

}  // namespace remat::test

// Two steps of the tiny GPT at batch 1, sequence 8 on any remat Device, one step at a time so
// sessions on several devices can be interleaved. Same seed and batches everywhere: the results
// of any two devices of the same driver are bit-identical.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/session.h"
#include "tests/support/random_fill.h"

namespace remat::test {

inline SessionConfig tiny_config() {
  SessionConfig c;
  c.model = ModelConfig::preset("tiny");
  c.shape.batch = 1;
  c.shape.seq = 8;
  c.seed = 7;
  return c;
}

inline float tiny_step(Session& s, uint32_t step) {
  const auto vocab = static_cast<uint32_t>(s.config().model.vocab);
  const std::size_t n = std::size_t(s.config().shape.batch) * s.config().shape.seq;
  return s.step(random_indices(n, 300 + step, vocab), random_indices(n, 400 + step, vocab));
}

// The parameters' bytes, for bit-for-bit comparison.
inline std::vector<uint8_t> parameter_bytes(const Session& s) {
  std::vector<uint8_t> out;
  for (const auto& [name, values] : s.parameters()) {
    const auto* p = reinterpret_cast<const uint8_t*>(values.data());
    out.insert(out.end(), p, p + values.size() * sizeof(float));
  }
  return out;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace remat::test

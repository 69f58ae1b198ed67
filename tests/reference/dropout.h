// Plain reference for dropout: the same Philox4x32-10 mask as the GPU kernels, bit for bit,
// forward and backward side by side.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace remat::ref {

// Philox4x32-10 (Salmon et al., SC'11), as in Random123.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key);

struct DropoutConfig {
  float p = 0;  // drop probability in [0, 1)
  uint64_t seed = 0;
  uint32_t step = 0, op_id = 0;
};

// true when element i is kept: word i % 4 of philox((i / 4, step, op_id, 0), seed) is at or
// above round(p * 2^32).
bool dropout_keep(const DropoutConfig& cfg, uint32_t i);

// y = x * keep / (1 - p). Resizes y.
template <class T>
void dropout_forward(std::vector<T>& y, const std::vector<T>& x, const DropoutConfig& cfg);
// dx (=|+=) dy * keep / (1 - p); dx must be sized already.
template <class T>
void dropout_backward(std::vector<T>& dx, const std::vector<T>& dy, const DropoutConfig& cfg,
                      bool accumulate);

}  // namespace remat::ref

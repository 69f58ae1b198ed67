// The textbook closed form for activation memory and recompute time (uniform layers, one saved
// input per checkpoint interval; e.g. Chen et al. 2016 and the usual lecture-note model):
//   M_a = 2*H*S*L*B*b   (all activations),  M_c = 2*H*S*I*B*b   (one interval's worth),
//   T_c / T_b = 1 + L / (2*I).
// remat reports it next to the exact plan and never uses it to decide anything.
#pragma once

#include <cstdint>
#include <optional>

namespace remat {

struct AnalyticEstimate {
  double M_a = 0;                   // bytes, no checkpointing
  std::optional<double> M_c;        // bytes at interval I (when the plan has one)
  std::optional<double> T_c_ratio;  // step time with checkpointing / without
  std::optional<int> interval;      // I
};

// hidden H, sequence S, layers L, batch B, bytes per element b, interval I.
AnalyticEstimate textbook_estimate(int64_t hidden, int64_t seq, int64_t layers, int64_t batch,
                                   int64_t elem_bytes, std::optional<int> interval);

}  // namespace remat

#include "planner/analytic.h"

namespace remat {

AnalyticEstimate textbook_estimate(int64_t hidden, int64_t seq, int64_t layers, int64_t batch,
                                   int64_t elem_bytes, std::optional<int> interval) {
  AnalyticEstimate e;
  const double per_layer = 2.0 * static_cast<double>(hidden) * static_cast<double>(seq) *
                           static_cast<double>(batch) * static_cast<double>(elem_bytes);
  e.M_a = per_layer * static_cast<double>(layers);
  if (interval && *interval > 0) {
    e.interval = interval;
    e.M_c = per_layer * *interval;
    e.T_c_ratio = 1.0 + static_cast<double>(layers) / (2.0 * *interval);
  }
  return e;
}

}  // namespace remat

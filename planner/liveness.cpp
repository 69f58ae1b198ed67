#include "planner/liveness.h"

#include <stdexcept>

namespace remat {

Liveness compute_liveness(const Schedule& schedule, uint64_t alignment) {
  Liveness l;
  l.intervals.resize(schedule.tensors.size());
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const Step& st = schedule.steps[i];
    const int s = static_cast<int>(i);
    for (TensorId t : st.inputs) {
      Interval& iv = l.intervals[static_cast<size_t>(t)];
      if (schedule.tensors[static_cast<size_t>(t)].persistent) continue;
      if (!iv.used())
        throw std::logic_error("liveness: " + schedule.tensors[static_cast<size_t>(t)].name +
                               " is read before it is written");
      iv.last = s;
    }
    for (TensorId t : st.outputs) {
      Interval& iv = l.intervals[static_cast<size_t>(t)];
      if (schedule.tensors[static_cast<size_t>(t)].persistent) continue;
      if (!iv.used()) iv.first = s;
      iv.last = s;
    }
  }
  // Sweep: +size where a lifetime starts, -size after it ends.
  std::vector<int64_t> delta(schedule.steps.size() + 1, 0);
  for (size_t t = 0; t < l.intervals.size(); ++t) {
    const Interval& iv = l.intervals[t];
    if (!iv.used()) continue;
    const auto size = static_cast<int64_t>(align_up(schedule.tensors[t].bytes(), alignment));
    delta[static_cast<size_t>(iv.first)] += size;
    delta[static_cast<size_t>(iv.last) + 1] -= size;
  }
  int64_t live = 0;
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    live += delta[s];
    if (static_cast<uint64_t>(live) > l.lower_bound) {
      l.lower_bound = static_cast<uint64_t>(live);
      l.peak_step = static_cast<int>(s);
    }
  }
  return l;
}

}  // namespace remat

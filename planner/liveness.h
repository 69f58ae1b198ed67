// Lifetimes over the schedule: a tensor is live from the step that first writes it to the step
// that last touches it, both inclusive (a step's inputs and outputs coexist). The lower bound is
// the most bytes live at any one step: no layout of these lifetimes can use less.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/schedule.h"

namespace remat {

struct Interval {
  int first = -1;  // first step that writes it (-1: never touched)
  int last = -1;   // last step that reads or writes it
  bool used() const { return first >= 0; }
  bool overlaps(const Interval& o) const { return first <= o.last && o.first <= last; }
};

struct Liveness {
  std::vector<Interval> intervals;  // per schedule tensor; persistent tensors are left unused
  uint64_t lower_bound = 0;         // max over steps of live arena bytes (aligned sizes)
  int peak_step = -1;               // a step where that maximum is reached
};

// Arena tensors only (persistent ones are placed separately). `alignment` sizes each tensor as
// the layout will. Throws std::logic_error if an arena tensor is read before it is written.
Liveness compute_liveness(const Schedule& schedule, uint64_t alignment);

}  // namespace remat

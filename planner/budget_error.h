// A budget below the smallest plan: the one line the user reads (it names the minimum, and
// scripts read the minimum from it), and the minimum itself for callers that plan several
// candidate graphs and must report the smallest of their minimums (planner/delta_chunk.h).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace remat {

struct BudgetBelowMinimum : std::invalid_argument {
  BudgetBelowMinimum(const std::string& message, uint64_t minimum_bytes)
      : std::invalid_argument(message), minimum(minimum_bytes) {}
  uint64_t minimum;  // bytes of what the budget caps (the arena, or the whole session)
};

}  // namespace remat

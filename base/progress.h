// Progress and cancellation for long calls (loading, saving, initialising weights, compiling
// kernels). The callback sees how far a phase is and returns false to cancel it.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace remat {

struct ProgressEvent {
  std::string_view phase;  // "load", "save", "init" (seeded weights) or "compile" (pipelines)
  uint64_t done = 0;       // units finished: bytes, or pipelines for "compile"
  uint64_t total = 0;      // units in the phase; done == total at its end
};

// Return false to cancel: the call in progress throws Cancelled.
using ProgressFn = std::function<bool(const ProgressEvent&)>;

class Cancelled : public std::runtime_error {
 public:
  explicit Cancelled(std::string_view phase)
      : std::runtime_error("cancelled during " + std::string(phase)) {}
};

// Reports one event when `progress` is set; throws Cancelled when it answers false.
inline void report_progress(const ProgressFn& progress, std::string_view phase, uint64_t done,
                            uint64_t total) {
  if (progress && !progress(ProgressEvent{phase, done, total})) throw Cancelled(phase);
}

}  // namespace remat

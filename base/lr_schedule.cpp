#include "base/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace remat {

void validate(const LrSchedule& s) {
  if (!std::isfinite(s.base_lr) || s.base_lr < 0)
    throw std::invalid_argument("learning rate must be a finite number >= 0");
  if (s.warmup_steps < 0) throw std::invalid_argument("warmup steps must be >= 0");
  if (!std::isfinite(s.min_lr_ratio) || s.min_lr_ratio < 0 || s.min_lr_ratio > 1)
    throw std::invalid_argument("minimum learning-rate ratio must be between 0 and 1");
  if (s.decay == LrDecay::constant) return;
  if (s.total_steps <= 0)
    throw std::invalid_argument(std::string(lr_decay_name(s.decay)) +
                                " decay needs the run's total number of steps (> 0)");
  if (s.warmup_steps > s.total_steps)
    throw std::invalid_argument("warmup steps (" + std::to_string(s.warmup_steps) +
                                ") exceed the run's " + std::to_string(s.total_steps) + " steps");
}

double learning_rate(const LrSchedule& s, int64_t step) {
  if (step < s.warmup_steps)
    return s.base_lr * double(step) / double(std::max<int64_t>(1, s.warmup_steps));
  const double span = double(std::max<int64_t>(1, s.total_steps - s.warmup_steps));
  switch (s.decay) {
    case LrDecay::constant:
      return s.base_lr;
    case LrDecay::linear:
      return s.base_lr * std::max(0.0, double(s.total_steps - step) / span);
    case LrDecay::cosine: {
      const double progress = double(step - s.warmup_steps) / span;
      const double cycles = 0.5;
      const double f = 0.5 * (1.0 + std::cos(std::numbers::pi * 2.0 * cycles * progress));
      return s.base_lr * std::max(0.0, f * (1.0 - s.min_lr_ratio) + s.min_lr_ratio);
    }
  }
  return s.base_lr;
}

LrDecay parse_lr_decay(std::string_view name) {
  if (name == "constant") return LrDecay::constant;
  if (name == "linear") return LrDecay::linear;
  if (name == "cosine") return LrDecay::cosine;
  throw std::invalid_argument("unknown learning-rate schedule '" + std::string(name) +
                              "'; use constant, linear or cosine");
}

const char* lr_decay_name(LrDecay decay) {
  switch (decay) {
    case LrDecay::constant:
      return "constant";
    case LrDecay::linear:
      return "linear";
    case LrDecay::cosine:
      return "cosine";
  }
  return "constant";
}

}  // namespace remat

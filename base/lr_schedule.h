// Learning-rate schedules as Hugging Face transformers defines them (optimization.py), so a run
// configured like a transformers fine-tune steps with the same rates:
//
//   warmup (every decay):  step < W:  lr = base * step / max(1, W)
//   constant:              lr = base                        (get_constant_schedule_with_warmup)
//   linear:                lr = base * max(0, (T - step) / max(1, T - W))
//                                                           (get_linear_schedule_with_warmup)
//   cosine:                p = (step - W) / max(1, T - W)
//                          f = 0.5 * (1 + cos(pi * 2 * cycles * p)), cycles = 0.5
//                          lr = base * max(0, f * (1 - m) + m)
//                          (get_cosine_with_min_lr_schedule_with_warmup with min_lr_rate m;
//                           m = 0 is get_cosine_schedule_with_warmup)
//
// `step` counts optimizer steps already taken, from 0, as transformers' LambdaLR does: the first
// update uses step 0 (so with warmup its rate is 0, as in transformers).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace remat {

enum class LrDecay { constant, linear, cosine };

struct LrSchedule {
  LrDecay decay = LrDecay::constant;
  double base_lr = 3e-4;
  int64_t warmup_steps = 0;  // W
  int64_t total_steps = 0;   // T, the run's optimizer steps; needed by linear and cosine
  double min_lr_ratio = 0;   // m: cosine ends at base * m instead of 0
};

// Throws std::invalid_argument naming the field when the schedule cannot be followed: negative
// or non-finite rates, warmup longer than the run, a decaying schedule without total_steps.
void validate(const LrSchedule& s);

// The rate for the update after `step` optimizer steps (validated schedule; step >= 0).
double learning_rate(const LrSchedule& s, int64_t step);

// "constant", "linear" or "cosine"; throws std::invalid_argument listing those for anything else.
LrDecay parse_lr_decay(std::string_view name);
const char* lr_decay_name(LrDecay decay);

}  // namespace remat

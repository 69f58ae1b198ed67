// Learning-rate schedules against values worked out by hand from transformers' formulas
// (src/transformers/optimization.py: get_constant_schedule_with_warmup,
// get_linear_schedule_with_warmup, get_cosine_schedule_with_warmup and
// get_cosine_with_min_lr_schedule_with_warmup), base rate 1e-3, 10 warmup steps of 110.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "base/lr_schedule.h"

using namespace remat;

namespace {

LrSchedule schedule(LrDecay decay, double min_ratio = 0) {
  LrSchedule s;
  s.decay = decay;
  s.base_lr = 1e-3;
  s.warmup_steps = 10;
  s.total_steps = 110;
  s.min_lr_ratio = min_ratio;
  validate(s);
  return s;
}

double at(const LrSchedule& s, int64_t step) {
  return learning_rate(s, step);
}

}  // namespace

TEST_CASE("warmup rises linearly from 0 for every decay", "[base]") {
  for (LrDecay d : {LrDecay::constant, LrDecay::linear, LrDecay::cosine}) {
    const auto s = schedule(d);
    CHECK(at(s, 0) == 0.0);
    CHECK(at(s, 1) == Approx(1e-4).epsilon(1e-12));   // 1e-3 * 1/10
    CHECK(at(s, 5) == Approx(5e-4).epsilon(1e-12));   // 1e-3 * 5/10
    CHECK(at(s, 10) == Approx(1e-3).epsilon(1e-12));  // warmup done: the full rate
  }
  LrSchedule none = schedule(LrDecay::cosine);
  none.warmup_steps = 0;
  CHECK(at(none, 0) == Approx(1e-3).epsilon(1e-12));  // no warmup: full rate at once
}

TEST_CASE("constant stays at the base rate after warmup", "[base]") {
  const auto s = schedule(LrDecay::constant);
  CHECK(at(s, 11) == 1e-3);
  CHECK(at(s, 1000) == 1e-3);
}

TEST_CASE("linear decay reaches 0 at the last step and stays there", "[base]") {
  const auto s = schedule(LrDecay::linear);
  CHECK(at(s, 60) == Approx(5e-4).epsilon(1e-12));    // (110 - 60) / 100
  CHECK(at(s, 85) == Approx(2.5e-4).epsilon(1e-12));  // (110 - 85) / 100
  CHECK(at(s, 110) == 0.0);
  CHECK(at(s, 130) == 0.0);  // max(0, negative)
}

TEST_CASE("cosine decay follows half a cosine, to 0 or to the minimum ratio", "[base]") {
  const auto s = schedule(LrDecay::cosine);
  CHECK(at(s, 35) == Approx(8.535533905932737e-4).epsilon(1e-12));  // p = 1/4: (1 + cos(pi/4)) / 2
  CHECK(at(s, 60) == Approx(5e-4).epsilon(1e-12));                  // p = 1/2: (1 + cos(pi/2)) / 2
  CHECK(at(s, 85) == Approx(1.464466094067262e-4).epsilon(1e-12));  // p = 3/4: (1 + cos(3pi/4)) / 2
  CHECK(at(s, 110) == Approx(0.0).margin(1e-18));                   // p = 1: (1 + cos(pi)) / 2
  // Past the last step transformers' formula rises again: p = 1.1 gives (1 + cos(1.1 pi)) / 2.
  CHECK(at(s, 120) == Approx(2.447174185242318e-5).epsilon(1e-9));
  const auto floor = schedule(LrDecay::cosine, 0.1);
  CHECK(at(floor, 10) == Approx(1e-3).epsilon(1e-12));    // 1 * 0.9 + 0.1
  CHECK(at(floor, 60) == Approx(5.5e-4).epsilon(1e-12));  // 0.5 * 0.9 + 0.1
  CHECK(at(floor, 110) == Approx(1e-4).epsilon(1e-12));   // 0 * 0.9 + 0.1
}

TEST_CASE("schedules that cannot be followed are refused by name", "[base]") {
  LrSchedule s;
  s.decay = LrDecay::cosine;
  CHECK_THROWS_WITH(validate(s), "cosine decay needs the run's total number of steps (> 0)");
  s.total_steps = 5;
  s.warmup_steps = 6;
  CHECK_THROWS_WITH(validate(s), "warmup steps (6) exceed the run's 5 steps");
  s.warmup_steps = -1;
  CHECK_THROWS_WITH(validate(s), "warmup steps must be >= 0");
  s.warmup_steps = 0;
  s.min_lr_ratio = 1.5;
  CHECK_THROWS_WITH(validate(s), "minimum learning-rate ratio must be between 0 and 1");
  s.min_lr_ratio = 0;
  s.base_lr = -1;
  CHECK_THROWS_WITH(validate(s), "learning rate must be a finite number >= 0");
  LrSchedule constant;  // constant needs no step count
  CHECK_NOTHROW(validate(constant));
  CHECK(parse_lr_decay("linear") == LrDecay::linear);
  CHECK(std::string(lr_decay_name(parse_lr_decay("cosine"))) == "cosine");
  CHECK_THROWS_WITH(parse_lr_decay("step"),
                    "unknown learning-rate schedule 'step'; use constant, linear or cosine");
}

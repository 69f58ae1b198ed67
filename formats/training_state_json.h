// state.json of a training state (runtime/training_state.h): the text written and the checks
// made when it is read back. Pure C++; docs/training-state.md lists every field.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/content_hash.h"
#include "base/lr_schedule.h"
#include "graph/model_config.h"
#include "graph/optimizer_config.h"
#include "planner/policy.h"

namespace remat {

inline constexpr int kTrainingStateFormat = 1;

// What the run read and how, as the app describes it; recorded in state.json as given.
struct RunRecord {
  std::map<std::string, FileIdentity> files;    // e.g. "data", "tokenizer", "init"
  std::map<std::string, std::string> settings;  // the app's other settings, e.g. "data_format"
};

// state.json, read and checked.
struct TrainingState {
  int format = kTrainingStateFormat;
  uint32_t step = 0;  // optimizer steps taken
  ModelConfig model;
  TrainShape shape;
  int accum = 1;
  uint64_t seed = 0;
  Policy policy;
  std::optional<uint64_t> arena_budget;
  OptimizerConfig optimizer;
  LrSchedule schedule;  // its base_lr is optimizer.lr
  RunRecord run;
  uint64_t params_hash =
      0;  // FNV-1a 64 over words (base/content_hash.h) of params.safetensors' data section
  uint64_t optimizer_hash = 0;  // of optimizer.safetensors' data section
};

// The JSON text of `state`, pretty-printed, ending in a newline.
std::string training_state_json(const TrainingState& state);

// Parses `text`; `origin` names the file in errors. Every field must be present with its type
// and a value in range (std::invalid_argument "<origin>: <what is wrong>"); a format newer than
// kTrainingStateFormat is refused as such. The model and shape are validated as a session would.
TrainingState parse_training_state(std::string_view text, const std::string& origin);

}  // namespace remat

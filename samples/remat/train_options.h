// `remat train`'s flags (train_spec, its help text) and the options they give
// (parse_train_options, which checks them before anything runs).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/lr_schedule.h"
#include "cli_args.h"
#include "graph/optimizer_config.h"
#include "model_args.h"
#include "train_data.h"
#include "train_lora.h"
#include "train_preference.h"
#include "train_resume.h"

namespace remat {
struct SessionConfig;
}  // namespace remat

namespace remat::cli {

struct TrainOptions {
  ModelSelection sel;
  std::filesystem::path data;
  std::optional<std::filesystem::path> val_data;
  int val_every = 0;  // 0: only before the first and after the last step
  int val_batches = 8;
  std::optional<std::string> tokenizer;
  std::string data_format = "auto";
  JsonlOptions jsonl;
  std::optional<std::filesystem::path> init, save, log_json, save_state;
  std::optional<Resumed> resumed;
  int steps = 100;
  std::optional<int> stop_at;  // --stop-at: the step after which a longer run stops
  int accum = 1;
  int save_every = 0;
  int sample = 0;
  bool choose_delta_chunk = true;  // --delta-chunk auto (Qwen3.5)
  OptimizerConfig opt;
  LrSchedule schedule;
  uint64_t seed = 0;
  bool quiet = false;
  TrainLora lora;  // --lora and its files
  // How .gguf outputs are written: --save-dtype, --adapter-dtype, the tokenizer keys of a .gguf
  // --init.
  GgufSaveOptions gguf;
  PreferenceOptions pref;  // --objective dpo|kto and its options
};

// The flags `remat train` takes.
CommandSpec train_spec();

// The options of a command line; a --resume run takes its model, shape and settings from the
// state. UsageError names the flag that is wrong.
TrainOptions parse_train_options(const std::vector<std::string>& argv);

// The session the options describe, for every objective (SFT and preference runs alike).
SessionConfig session_config(const TrainOptions& o);

// After --init is loaded, before any step: a --save or --merge-out that could not write what the
// checkpoint held beside its parameters (a Qwen3.5 MTP layer with no name in the other format;
// runtime/session_files.h) is a UsageError naming the flag, not a failure after training.
void refuse_unwritable_outputs(const Session& session, const TrainOptions& o);

}  // namespace remat::cli

// `remat bench --sweep-configs`: several training configurations (full fine-tuning, LoRA, 16-bit
// weights ...) on one plot of whole-session device memory against step time. Each
// configuration is a set of flags added to the command line; each is measured under --memory
// budgets from its store-everything total down to the smallest total that plans.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "cli_args.h"

namespace remat::cli {

struct SweepConfig {
  std::string name;                // "LoRA r8, f32 base"
  std::vector<std::string> flags;  // added to the command line: {"--lora", "8"}
};

// The configurations, one line each. One whose flags this build does not know is reported as
// skipped, naming the flag.
const std::vector<SweepConfig>& sweep_configs();

struct ConfigSweepOptions {
  int steps = 3;              // measured steps per point
  int warmup = 1;             // unmeasured steps before them
  int points = 4;             // budgets per configuration
  bool plot = true;           // draw DIR/configs.png
  std::filesystem::path out;  // DIR
};

// Runs every configuration: `args` is the bench command line without --sweep-configs, parsed
// with `spec` after each configuration's flags are appended. Writes DIR/configs.csv,
// DIR/configs.json and (python3 + matplotlib) DIR/configs.png.
int run_config_sweep(const std::vector<std::string>& args, const CommandSpec& spec,
                     const ConfigSweepOptions& options);

}  // namespace remat::cli

// What `remat bench` was asked (bench_command.cpp parses it) and what each point of the
// frontier measured; the frontier's report (bench_report.h) and the kernel table
// (bench_kernels.h) read them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "graph/lora.h"
#include "model_args.h"
#include "planner/plan.h"
#include "runtime/session.h"
#include "step_timing.h"

namespace remat::cli {

// `remat bench`'s flags.
struct BenchOptions {
  ModelSelection sel;
  LoraSpec lora;  // --lora (rank 0: full fine-tuning)
  int steps = 3;
  int warmup = 1;
  int repeats = 5;
  bool sweep = false;
  bool kernels = false;
  bool plot = true;
  bool configs = false;  // --sweep-configs
  int points = 4;        // --points
  std::filesystem::path out;
};

// One policy or budget of the frontier, run (or refused) on the device.
struct BenchPoint {
  std::string label;               // "none", "every:2", "auto@12.0 MiB"
  Policy policy;                   // what was asked
  std::optional<uint64_t> budget;  // auto's budget
  std::optional<Plan> plan;        // absent when it could not be planned or run
  MemoryReport memory;
  Measurement m;
  std::string error;
  int loss_chunk = 0;  // the rows of logits the session held at a time (0: all)
};

inline double tokens_per_step(const BenchOptions& o) {
  return double(o.sel.shape.batch) * o.sel.shape.seq;
}

}  // namespace remat::cli

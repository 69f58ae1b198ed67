// Measurement shared by `remat bench` and `remat profile`: runs a Session on deterministic
// synthetic tokens with GPU timestamps on, and attributes every timed dispatch to the plan step
// it executes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace remat::cli {

// Time of one plan step (all of its dispatches), the median over the measured steps.
struct StepTime {
  int index = -1;              // into Plan::steps, as the dispatches carry it (Dispatch::step)
  const Step* step = nullptr;  // that plan step
  std::string label;           // its first dispatch's label, for display
  OpKind kind{};               // kernel family
  int dispatches = 0;          // dispatches it lowered to (every micro-batch's)
  double ms = 0;               // median GPU milliseconds (sum over its dispatches)
};

// Time of one shader over a step (all of its dispatches), the median over the measured steps.
struct KernelTime {
  std::string kernel;  // kernel_name of the shader
  int dispatches = 0;  // its dispatches per step
  double ms = 0;       // median GPU milliseconds per step (sum over its dispatches)
  // The sum over its dispatches of each one's fastest time across the measured steps: what it
  // costs when nothing else takes the cores (on a shared machine the median moves with the
  // load far more than a kernel change does).
  double fastest_ms = 0;
};

struct Measurement {
  std::vector<double> wall_ms;      // per measured step: Session::step as the host saw it
  std::vector<double> gpu_ms;       // per measured step: sum of the dispatch timestamps
  std::vector<StepTime> steps;      // per plan step that ran, schedule order
  std::vector<KernelTime> kernels;  // per shader that ran, slowest first
  double median_wall_ms = 0;
  double median_gpu_ms = 0;
  double median_host_ms = 0;  // median of (wall - gpu): time outside timed GPU work
  double forward_gpu_ms = 0;  // the forward pass and loss: the Phase::forward steps' medians
};

// Deterministic tokens and next-token targets for `accum` micro-batches of [B,T] (an LCG).
void synthetic_batch(const ModelConfig& model, const TrainShape& shape, int accum,
                     std::vector<uint32_t>& tokens, std::vector<uint32_t>& targets);

// Runs `warmup` unmeasured and `steps` measured optimizer steps. The session must have been
// created with timestamps on.
Measurement measure_session(Session& session, int warmup, int steps);

double median(std::vector<double> v);

}  // namespace remat::cli

// How long an op takes, predicted. By default a roofline-style estimate from the op's FLOPs and
// bytes moved; a measured per-kernel table (JSON) can replace the rates. The planner minimizes
// these predictions; the reported step-time ratio is their sum relative to the no-recompute plan.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "graph/graph.h"

namespace remat {

// Fills op.flops and op.bytes from the op kind and its tensors' shapes.
void estimate_op_work(const Graph& graph, Op& op);

// Throughput of one kernel family (or the device default).
struct KernelRate {
  double flops_per_s = 10e12;  // sustained arithmetic rate
  double bytes_per_s = 400e9;  // sustained memory bandwidth
  double launch_s = 5e-6;      // fixed cost per dispatch
};

class CostModel {
 public:
  CostModel() = default;
  // {"default": {rate}, "kernels": {"matmul": {rate}, ...}} where a rate has any of
  // "flops_per_s", "bytes_per_s", "launch_s" (missing fields fall back to the default rate).
  // Unknown kernel names and non-positive rates are std::invalid_argument.
  static CostModel from_json(std::string_view text);
  static CostModel load(const std::string& path);

  // max(compute time, memory time) + launch.
  double seconds(const Op& op) const;
  const KernelRate& rate(OpKind kind) const;

 private:
  KernelRate default_;                    // rate for kernels the table does not list
  std::map<OpKind, KernelRate> kernels_;  // measured per-kernel rates
};

}  // namespace remat

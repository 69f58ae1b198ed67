// `remat bench`'s frontier report: ratios against the step without checkpointing, the table
// it prints, its CSV and its JSON (docs/benchmarks.md describes the columns).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "bench_options.h"
#include "runtime/vulkan/device.h"

namespace remat::cli {

// The step time of policy `none`, against which every point's ratios are taken. Measured when
// none ran; when it does not fit the device (the case checkpointing exists for: GPT-2 on a 2 GiB
// device), estimated from the measured point with the least predicted recompute, as its time
// divided by its predicted ratio.
struct Baseline {
  double none_ms = NAN;
  std::string estimated_from;  // empty when none was measured
};

// printf of one number, e.g. fmt("%.1f", 2.5).
std::string fmt(const char* f, double v);
// A CSV cell: quoted (quotes doubled) when it holds a comma, a quote or a line break.
std::string csv_cell(const std::string& text);

Baseline baseline(const std::vector<BenchPoint>& pts);
// One row per point: plan and measured bytes, times, ratios and errors.

std::string csv(const BenchOptions& o, const std::vector<BenchPoint>& pts, const Baseline& none);

// The same with the device, the model and every plan's report.
std::string json(const BenchOptions& o, const Device& device, const std::vector<BenchPoint>& pts,
                 const Baseline& none);

// The frontier as the terminal shows it.
void print_table(const BenchOptions& o, const std::vector<BenchPoint>& pts, const Baseline& none);

}  // namespace remat::cli

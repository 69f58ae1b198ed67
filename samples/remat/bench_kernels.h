// `remat bench --kernels`: each kernel of one step against the device's measured peaks.
#pragma once

#include "bench_options.h"

namespace remat::cli {

int run_bench_kernels(const BenchOptions& o);

}  // namespace remat::cli

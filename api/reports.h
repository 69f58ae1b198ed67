// The plan and memory reports of the C API, filled from the library's Plan and MemoryReport.
#pragma once

#include "graph/model_config.h"
#include "planner/plan.h"
#include "remat/remat.h"
#include "runtime/session.h"

namespace remat::capi {

// A plan report the caller may fill: this release's size, or one that ends before delta_chunk
// (the size of the struct before it); anything else is REMAT_ERROR_INVALID_ARGUMENT.
void require_plan_report(const remat_plan_report* report);
// Overwrites the fields after struct_size that out's size holds (require_plan_report checked it).
void fill_plan_report(const Plan& plan, const ModelConfig& model, remat_plan_report& out);
void fill_memory_report(const MemoryReport& memory, remat_memory_report& out);

}  // namespace remat::capi

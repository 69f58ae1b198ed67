// The plan and memory reports of the C API, filled from the library's Plan and MemoryReport.
#pragma once

#include "graph/model_config.h"
#include "planner/plan.h"
#include "remat/remat.h"
#include "runtime/session.h"

namespace remat::capi {

// Overwrites everything after struct_size (which the caller has checked).
void fill_plan_report(const Plan& plan, const ModelConfig& model, remat_plan_report& out);
void fill_memory_report(const MemoryReport& memory, remat_memory_report& out);

}  // namespace remat::capi

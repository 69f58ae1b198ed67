// Checks a Plan against its training graph by symbolic execution, independently of how the
// planner built it: every step reads tensors that exist and hold the value of the right producer
// (a recomputed copy counts), gradients are complete before they are read and their accumulate
// flags match the contract, nothing an op reads was overwritten in the arena since it was written,
// lifetime-overlapping tensors never share arena bytes, offsets are aligned, no tensor crosses an
// allocation page and the pages sum to their buffer, the arena fits its budget, and the backward
// order is the graph's.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "planner/plan.h"

namespace remat {

// Empty when the plan is sound; otherwise one line per problem found (capped at a few dozen).
std::vector<std::string> verify_plan(const Graph& graph, const Plan& plan);

}  // namespace remat

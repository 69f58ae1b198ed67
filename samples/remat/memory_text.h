// The whole-session memory (--memory, planner/memory_budget.h) as remat plan, train and bench
// print it: one line for humans, one object for JSON.
#pragma once

#include <optional>
#include <string>

#include "base/json_writer.h"
#include "model_args.h"
#include "planner/memory_budget.h"

namespace remat::cli {

// What --memory asks of the planner for `sel` (its policy, arena cap and chunk choice).
MemoryRequest memory_request(const ModelSelection& sel, uint64_t alignment,
                             uint64_t max_binding_bytes, const AllocationLimits& allocation);

// "allocations: persistent buffer 3, arena 1, extras 4 (8 in all, each at most 2.00 GiB)".
std::string allocations_line(const Plan& plan, const SessionMemory& m);
void allocations_json(JsonWriter& j, const Plan& plan, const SessionMemory& m);

// " (cap 60.00 MiB)" under --arena, " (memory cap 700.00 MiB, loss chunk 128 rows)" under
// --memory (both when both), " (loss chunk 640 rows)" for a chunked loss without --memory, else
// "": what the plan line prints after the arena.
std::string budget_text(const ModelSelection& sel, int loss_chunk);

// "session  1.52 GiB = frozen weights ... (budget 1.60 GiB)".
std::string session_memory_line(const SessionMemory& m, std::optional<uint64_t> budget);

// {"total_bytes", "budget_bytes", "frozen_bytes", "frozen_dtype", "trainable_bytes", "io_bytes",
// "arena_bytes", "page_padding_bytes", "extras": {name: bytes}, "loss_chunk"}.
void session_memory_json(JsonWriter& j, const SessionMemory& m, std::optional<uint64_t> budget);

}  // namespace remat::cli

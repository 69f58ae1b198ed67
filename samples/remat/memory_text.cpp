#include "memory_text.h"

namespace remat::cli {

MemoryRequest memory_request(const ModelSelection& sel, uint64_t alignment,
                             uint64_t max_binding_bytes) {
  return {sel.memory.value_or(0),
          sel.policy,
          sel.arena,
          sel.choose_loss_chunk,
          alignment,
          max_binding_bytes,
          sel.costs ? &*sel.costs : nullptr};
}

std::string budget_text(const ModelSelection& sel, int loss_chunk) {
  std::string parts;
  if (sel.arena) parts = "cap " + format_bytes(*sel.arena);
  if (sel.memory)
    parts += (parts.empty() ? "" : ", ") + std::string("memory cap ") + format_bytes(*sel.memory) +
             ", loss chunk " +
             (loss_chunk ? std::to_string(loss_chunk) + " rows" : std::string("0 (whole logits)"));
  else if (loss_chunk)
    parts += (parts.empty() ? "" : ", ") + std::string("loss chunk ") + std::to_string(loss_chunk) +
             " rows";
  return parts.empty() ? "" : " (" + parts + ")";
}

std::string session_memory_line(const SessionMemory& m, std::optional<uint64_t> budget) {
  std::string s = "session total " + format_bytes(m.total()) + " = " + m.describe();
  if (budget)
    s +=
        " (budget " + format_bytes(*budget) + ", " + format_bytes(*budget - m.total()) + " unused)";
  return s;
}

void session_memory_json(JsonWriter& j, const SessionMemory& m, std::optional<uint64_t> budget) {
  j.begin_object().field("total_bytes", m.total()).field("budget_bytes", budget);
  j.field("frozen_bytes", m.frozen_bytes).field("frozen_dtype", m.frozen_dtype);
  j.field("trainable_bytes", m.trainable_bytes).field("io_bytes", m.io_bytes);
  j.field("arena_bytes", m.arena_bytes).field("loss_chunk", m.loss_chunk).key("extras");
  j.begin_object();
  for (const auto& [name, bytes] : m.extras.named()) j.field(name, bytes);
  j.end_object().end_object();
}

}  // namespace remat::cli

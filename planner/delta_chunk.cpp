#include "planner/delta_chunk.h"

#include <optional>
#include <stdexcept>
#include <string>

#include "graph/delta_rule_workspace.h"
#include "planner/budget_error.h"

namespace remat {

std::vector<int> delta_chunk_candidates(int seq) {
  const int block = static_cast<int>(kDeltaRuleBlock);
  std::vector<int> out = {0};
  int top = block;
  while (top * 2 < seq) top *= 2;
  for (int len = top; len >= block && len < seq; len /= 2) out.push_back(len);
  return out;
}

bool delta_chunk_fits_binding(const ModelConfig& model, const TrainShape& shape, int chunk,
                              uint64_t max_binding_bytes) {
  if (max_binding_bytes == 0 || !model.qwen35) return true;
  const Qwen35Layers& l = model.qwen35_layers;
  const uint64_t state = uint64_t(shape.batch) * uint64_t(l.linear_value_heads) *
                         uint64_t(l.linear_key_head_dim) * uint64_t(l.linear_value_head_dim) * 4;
  const uint64_t len = chunk > 0 && chunk < shape.seq ? uint64_t(chunk) : uint64_t(shape.seq);
  const uint64_t starts = (uint64_t(shape.seq) + len - 1) / len - 1;
  const uint64_t workspace = delta_rule_workspace_largest_part(
      {uint64_t(shape.batch), uint64_t(l.linear_value_heads), uint64_t(l.linear_key_head_dim),
       uint64_t(l.linear_value_head_dim), len});
  return workspace <= max_binding_bytes && starts * state <= max_binding_bytes;
}

SessionPlan plan_session_choosing_delta_chunk(const ModelConfig& model, const TrainShape& shape,
                                              const LoraSpec& lora,
                                              const SessionPlanRequest& request) {
  if (!model.qwen35) return plan_session(model, shape, lora, request);
  const bool budgeted = request.arena_budget || request.memory_budget;
  // Under a budget time decides, else memory; the other breaks ties.
  const auto better = [&](const Plan& a, const Plan& b) {
    const double ta = a.report.predicted_seconds, tb = b.report.predicted_seconds;
    if (budgeted) return ta < tb || (ta == tb && a.arena_bytes < b.arena_bytes);
    return a.arena_bytes < b.arena_bytes || (a.arena_bytes == b.arena_bytes && ta < tb);
  };
  std::optional<SessionPlan> best;
  // Under a budget no length meets, the smallest minimum over the lengths is the one to report:
  // it is the budget that would plan, and the longest length reaching it is named.
  std::optional<BudgetBelowMinimum> least;
  int least_chunk = 0;
  std::string why = "no delta-rule chunk length fits one storage-buffer binding of " +
                    std::to_string(request.max_binding_bytes) + " bytes; use a smaller batch";
  for (int chunk : delta_chunk_candidates(shape.seq)) {
    if (!delta_chunk_fits_binding(model, shape, chunk, request.max_binding_bytes)) continue;
    const int len = chunk == 0 ? shape.seq : chunk;
    if (request.max_delta_steps != 0 && uint32_t(len) > request.max_delta_steps) {
      why = "no delta-rule chunk length of at least 64 tokens runs in one call on this device (" +
            std::to_string(request.max_delta_steps) + " steps at most)";
      continue;
    }
    TrainShape s = shape;
    s.delta_chunk = chunk;
    try {
      SessionPlan p = plan_session(model, s, lora, request);
      if (!best || better(p.plan, best->plan)) best = std::move(p);
    } catch (const BudgetBelowMinimum& e) {
      if (!least || e.minimum < least->minimum) least = e, least_chunk = len;
    } catch (const std::invalid_argument& e) {
      why = e.what();
    }
  }
  if (!best && least)
    throw BudgetBelowMinimum(std::string(least->what()) +
                                 " (the least of the delta-rule chunk lengths tried: " +
                                 std::to_string(least_chunk) + " tokens)",
                             least->minimum);
  if (!best) throw std::invalid_argument(why);
  return std::move(*best);
}

}  // namespace remat

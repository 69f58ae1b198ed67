#include "planner/memory_budget.h"

#include <cstdio>
#include <stdexcept>
#include <vector>

#include "graph/model_builder.h"
#include "planner/auto_search.h"
#include "planner/budget_error.h"
#include "planner/loss_chunk.h"

namespace remat {
namespace {

uint64_t aligned_sum(const Plan& p, const std::vector<TensorId>& ids) {
  uint64_t sum = 0;
  for (TensorId t : ids) sum += align_up(p.tensors.at(size_t(t)).bytes, p.alignment);
  return sum;
}

// "f32", or "bf16" when the 2-D weights are 16-bit and the 1-D gains and biases stay f32
// (graph/weight_dtype.h); "mixed" for any other combination; a QLoRA base's block types first
// ("q4_K/q6_K blocks, f32").
std::string frozen_dtype(const Plan& p) {
  std::string name, blocks;
  for (TensorId t : p.frozen) {
    const Tensor& tensor = p.tensors.at(size_t(t)).tensor;
    if (tensor.dtype == DType::blocks) {
      if (("/" + blocks + "/").find("/" + tensor.blocks.name + "/") == std::string::npos)
        blocks += (blocks.empty() ? "" : "/") + tensor.blocks.name;
      continue;
    }
    if (tensor.shape.size() < 2 && tensor.dtype == DType::f32) continue;
    const std::string d(dtype_name(tensor.dtype));
    if (!name.empty() && name != d) return "mixed";
    name = d;
  }
  std::string rest = name.empty() || name == "f32" ? "f32" : name + ", 1-D f32";
  if (p.frozen.empty()) rest = "";
  return blocks.empty() ? rest : blocks + " blocks, " + rest;
}

// The smallest arena of `g` under the request's policy, and a plan with the same persistent
// buffer (persistent bytes and extras do not depend on the checkpoints).
std::pair<uint64_t, Plan> smallest_arena(const Graph& g, const MemoryRequest& r) {
  PlanRequest req{r.policy, std::nullopt, r.alignment, r.costs, r.allocation};
  if (r.policy.kind != Policy::Kind::automatic) {
    Plan p = plan_strategy(g, policy_strategy(g, r.policy), req);
    return {p.arena_bytes, std::move(p)};
  }
  const uint64_t arena = AutoPlanner(g, req).minimum_arena();
  return {arena, plan_strategy(g, policy_strategy(g, Policy{}), req)};
}

// Flags that would lower the minimum, the largest saving first as far as the parts tell.
std::string remedies(const SessionMemory& m, const LoraSpec& lora, const TrainShape& shape,
                     bool chunk_chosen) {
  std::vector<std::string> ways;
  if (!lora.enabled()) ways.push_back("--lora R (train adapters on a frozen model)");
  if (lora.enabled() && m.frozen_dtype == "f32")
    ways.push_back("--weights-dtype bf16 (the frozen weights in 16 bits)");
  if (m.loss_chunk == 0 && !chunk_chosen && shape.batch * shape.seq > kLossChunkAlign)
    ways.push_back("--loss-chunk auto (no whole [B*T, vocab] logits)");
  ways.push_back("a smaller --batch or --seq (fewer activations)");
  std::string out;
  for (size_t i = 0; i < ways.size(); ++i)
    out += (i == 0 ? "" : i + 1 == ways.size() ? " or " : ", ") + ways[i];
  return out;
}

// The loss chunk to plan with `arena` bytes left for activations: the shape's own unless the
// request chooses. auto chooses as --loss-chunk auto does; a fixed policy keeps the whole logits
// when their total fits, else takes the chunk of the smallest plan.
int planned_chunk(const ModelConfig& model, const TrainShape& shape, const LoraSpec& lora,
                  const MemoryRequest& r, uint64_t arena, const SessionMemory& least) {
  if (!r.choose_loss_chunk) return shape.loss_chunk;
  if (r.policy.kind == Policy::Kind::automatic)
    return choose_loss_chunk(model, shape, arena, r.alignment, r.costs, lora, r.max_binding_bytes,
                             r.allocation);
  if (!logits_fit_binding(model, shape, 0, r.max_binding_bytes) ||
      !logits_fit_binding(model, shape, 0, page_bytes(r.allocation, r.alignment)))
    return least.loss_chunk;
  TrainShape whole = shape;
  whole.loss_chunk = 0;
  MemoryRequest fixed_chunk = r;
  fixed_chunk.choose_loss_chunk = false;
  const bool fits = minimum_memory(model, whole, lora, fixed_chunk).total() <= r.memory_budget;
  return fits ? 0 : least.loss_chunk;
}

}  // namespace

std::string format_mib(uint64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (uint64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / double(1 << 30));
  else if (bytes >= (uint64_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / double(1 << 20));
  else
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  return buf;
}

std::string SessionMemory::describe(const char* activations) const {
  std::string s;
  if (frozen_bytes) s += "frozen weights " + format_mib(frozen_bytes) + " (" + frozen_dtype + "), ";
  s += "trainable parameters + gradients + AdamW moments " + format_mib(trainable_bytes) + ", " +
       activations + " " + format_mib(arena_bytes) + " (" +
       (loss_chunk ? "loss in chunks of " + std::to_string(loss_chunk) + " rows"
                   : std::string("whole logits")) +
       "), io tensors " + format_mib(io_bytes) + ", extras " + format_mib(extras.total());
  if (page_padding) s += ", allocation page padding " + format_mib(page_padding);
  return s;
}

SessionMemory session_memory(const Plan& p, int loss_chunk, uint64_t max_binding_bytes) {
  SessionMemory m;
  m.frozen_bytes = aligned_sum(p, p.frozen);
  m.frozen_dtype = frozen_dtype(p);
  for (const auto* list : {&p.parameters, &p.parameter_grads, &p.adam_m, &p.adam_v})
    m.trainable_bytes += aligned_sum(p, *list);
  m.io_bytes = aligned_sum(p, {p.tokens, p.targets, p.losses});
  if (p.positions != kNoTensor) m.io_bytes += aligned_sum(p, {p.positions});
  m.page_padding = p.persistent_padding;
  if (m.persistent_bytes() != p.persistent_bytes)
    throw std::logic_error("session_memory: the persistent parts do not sum to the plan's buffer");
  m.arena_bytes = p.arena_bytes;
  m.extras = session_extras(p, max_binding_bytes);
  m.loss_chunk = loss_chunk;
  return m;
}

SessionMemory minimum_memory(const ModelConfig& model, const TrainShape& shape,
                             const LoraSpec& lora, const MemoryRequest& r) {
  std::vector<int> chunks = {shape.loss_chunk};
  if (r.choose_loss_chunk) {
    chunks = {0};
    if (shape.batch * shape.seq > kLossChunkAlign) chunks.push_back(kLossChunkAlign);
  }
  std::optional<SessionMemory> best;
  std::string refusal;
  bool best_binds = false;  // best's logits fit one binding (whole logits may not)
  for (int chunk : chunks) {
    TrainShape s = shape;
    s.loss_chunk = chunk;
    std::optional<Graph> g;
    try {
      g = build_training_model(model, s, lora);
    } catch (const std::invalid_argument& e) {
      // A chunk the graph refuses (a frozen tied head) is no candidate; whole logits always are.
      if (chunk == 0 || chunks.size() == 1) throw;
      continue;
    }
    // Whole logits larger than one allocation have no layout at all; a chunk of them may.
    if (chunk == 0 && chunks.size() > 1 &&
        !logits_fit_binding(model, shape, 0, page_bytes(r.allocation, r.alignment)))
      continue;
    auto [arena, plan] = smallest_arena(*g, r);
    SessionMemory m = session_memory(plan, chunk, r.max_binding_bytes);
    m.arena_bytes = arena;
    // Logits a binding cannot hold lose to any that it can, whatever their totals.
    const bool binds = logits_fit_binding(model, shape, chunk, r.max_binding_bytes);
    if (!best || (binds && !best_binds) || (binds == best_binds && m.total() < best->total())) {
      best = m;
      best_binds = binds;
    }
  }
  return *best;
}

MemoryPlan plan_memory(const ModelConfig& model, const TrainShape& shape, const LoraSpec& lora,
                       const MemoryRequest& r) {
  const SessionMemory least = minimum_memory(model, shape, lora, r);
  if (r.memory_budget < least.total())
    throw BudgetBelowMinimum(
        "memory budget of " + format_mib(r.memory_budget) + " (" + std::to_string(r.memory_budget) +
            " bytes) is below the smallest plan's total of " + format_mib(least.total()) + " (" +
            std::to_string(least.total()) +
            " bytes): " + least.describe("activations at the smallest plan") +
            "; to lower it: " + remedies(least, lora, shape, r.choose_loss_chunk),
        least.total());
  const uint64_t fixed = least.total() - least.arena_bytes;
  uint64_t arena = r.memory_budget - fixed;
  if (r.arena_budget) arena = std::min(arena, *r.arena_budget);
  MemoryPlan out;
  out.shape = shape;
  out.shape.loss_chunk = planned_chunk(model, shape, lora, r, arena, least);
  const Graph g = build_training_model(model, out.shape, lora);
  const bool automatic = r.policy.kind == Policy::Kind::automatic;
  out.plan = plan_graph(g, {r.policy, automatic ? std::optional(arena) : r.arena_budget,
                            r.alignment, r.costs, r.allocation});
  out.memory = session_memory(out.plan, out.shape.loss_chunk, r.max_binding_bytes);
  if (out.memory.total() > r.memory_budget)
    throw std::logic_error("plan_memory: the plan's total exceeds the budget it was made for");
  return out;
}

}  // namespace remat

#include "planner/loss_chunk.h"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

#include "planner/budget_error.h"
#include "planner/plan.h"

namespace remat {

bool logits_fit_binding(const ModelConfig& model, const TrainShape& shape, int chunk,
                        uint64_t max_binding_bytes) {
  const uint64_t rows = chunk == 0 ? uint64_t(shape.batch) * uint64_t(shape.seq) : uint64_t(chunk);
  return max_binding_bytes == 0 || rows * uint64_t(model.vocab) * 4 <= max_binding_bytes;
}

int largest_binding_chunk(const ModelConfig& model, uint64_t max_binding_bytes) {
  const uint64_t row_bytes = uint64_t(model.vocab) * 4;
  const uint64_t units = max_binding_bytes / row_bytes / kLossChunkAlign;
  return static_cast<int>(std::min<uint64_t>(units, INT32_MAX / kLossChunkAlign)) * kLossChunkAlign;
}

int binding_loss_chunk(const ModelConfig& model, const TrainShape& shape,
                       uint64_t max_binding_bytes) {
  if (logits_fit_binding(model, shape, 0, max_binding_bytes)) return 0;
  const int chunk = largest_binding_chunk(model, max_binding_bytes);
  if (chunk == 0)
    throw std::invalid_argument(
        "the LM head's logits of " + std::to_string(kLossChunkAlign) + " rows of a vocabulary of " +
        std::to_string(model.vocab) + " (" +
        std::to_string(uint64_t(kLossChunkAlign) * uint64_t(model.vocab) * 4) +
        " bytes) do not fit one storage-buffer binding of " + std::to_string(max_binding_bytes) +
        " bytes (maxStorageBufferRange); use a smaller vocabulary");
  // Whole logits do not fit, so B*T exceeds chunk: it is below B*T, as chunks must be.
  return chunk;
}

int default_loss_chunk(const ModelConfig& model, const TrainShape& shape, const LoraSpec& lora,
                       std::optional<uint64_t> auto_arena, uint64_t alignment,
                       const CostModel* costs, uint64_t max_binding_bytes,
                       const AllocationLimits& allocation) {
  if (auto_arena)
    return choose_loss_chunk(model, shape, *auto_arena, alignment, costs, lora, max_binding_bytes,
                             allocation);
  // Logits bound whole must lie in one binding and in one allocation page: the smaller decides.
  const uint64_t page = page_bytes(allocation, alignment);
  const uint64_t limit =
      page == 0 || (max_binding_bytes != 0 && max_binding_bytes < page) ? max_binding_bytes : page;
  return binding_loss_chunk(model, shape, limit);
}

int choose_loss_chunk(const ModelConfig& model, const TrainShape& shape, uint64_t budget,
                      uint64_t alignment, const CostModel* costs, const LoraSpec& lora,
                      uint64_t max_binding_bytes, const AllocationLimits& allocation) {
  const uint64_t page = page_bytes(allocation, alignment);
  const auto fits = [&](int chunk) {
    TrainShape s = shape;
    s.loss_chunk = chunk;
    // Logits larger than one allocation have no layout; smaller chunks may.
    return logits_fit_binding(model, shape, chunk, max_binding_bytes) &&
           logits_fit_binding(model, shape, chunk, page) &&
           minimum_arena_bytes(model, s, alignment, costs, lora, allocation) <= budget;
  };
  if (fits(0)) return 0;
  // Chunks are counted in units of kLossChunkAlign rows; the largest is the last below B*T.
  const int rows = shape.batch * shape.seq;
  int lo = 1, hi = (rows - 1) / kLossChunkAlign;
  if (hi < 1 || !fits(kLossChunkAlign)) {
    TrainShape s = shape;
    s.loss_chunk = hi < 1 ? 0 : kLossChunkAlign;
    // The arena planner's wording (planner/auto_search.cpp): scripts read the minimum from it.
    const uint64_t minimum = minimum_arena_bytes(model, s, alignment, costs, lora, allocation);
    throw BudgetBelowMinimum(
        "arena budget of " + std::to_string(budget) +
            " bytes is below the smallest feasible plan; the minimum is " +
            std::to_string(minimum) + " bytes" +
            (hi < 1 ? std::string()
                    : " (with the loss in chunks of " + std::to_string(kLossChunkAlign) + " rows)"),
        minimum);
  }
  while (lo < hi) {  // fits(lo) holds throughout
    const int mid = lo + (hi - lo + 1) / 2;
    if (fits(mid * kLossChunkAlign))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo * kLossChunkAlign;
}

}  // namespace remat

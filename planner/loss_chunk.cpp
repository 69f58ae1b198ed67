#include "planner/loss_chunk.h"

#include <stdexcept>
#include <string>

#include "planner/plan.h"

namespace remat {

bool logits_fit_binding(const ModelConfig& model, const TrainShape& shape, int chunk,
                        uint64_t max_binding_bytes) {
  const uint64_t rows = chunk == 0 ? uint64_t(shape.batch) * uint64_t(shape.seq) : uint64_t(chunk);
  return max_binding_bytes == 0 || rows * uint64_t(model.vocab) * 4 <= max_binding_bytes;
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
    throw std::invalid_argument(
        "arena budget " + std::to_string(budget) + " bytes is below the smallest plan, " +
        std::to_string(minimum_arena_bytes(model, s, alignment, costs, lora, allocation)) +
        " bytes, even with the " +
        (hi < 1 ? "whole logits"
                : "loss in chunks of " + std::to_string(kLossChunkAlign) + " rows"));
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

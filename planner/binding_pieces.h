// Pieces of a tensor that each fit one storage-buffer binding. GPT-2's token embedding (154 MB)
// is larger than maxStorageBufferRange on lavapipe and many phone GPUs (128 MiB), so every kernel
// that binds it (embedding, the tied LM head, AdamW, the gradient norm) binds it in row pieces,
// one dispatch each. A tensor that fits is one piece: the dispatches are the unsplit ones. Pure
// arithmetic on the binding limit, so the planner sizes what the pieces need (the gradient
// norm's partial sums, planner/session_extras.h) without a device.
#pragma once

#include <cstdint>
#include <vector>

namespace remat {

struct Piece {
  uint32_t begin, count;  // rows [begin, begin + count)
};

// `rows` rows of `row_bytes` each, in as few pieces as fit `max_binding_bytes` (0: no limit),
// every piece starting on a 256-byte boundary (the largest minStorageBufferOffsetAlignment Vulkan
// permits) from the tensor's start. std::invalid_argument naming `what` when even the smallest
// aligned piece does not fit.
std::vector<Piece> binding_pieces(uint64_t max_binding_bytes, uint64_t rows, uint64_t row_bytes,
                                  const char* what);

}  // namespace remat

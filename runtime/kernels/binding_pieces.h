// Pieces of a tensor that each fit one storage-buffer binding. GPT-2's token embedding (154 MB)
// is larger than maxStorageBufferRange on lavapipe and many phone GPUs (128 MiB), so every kernel
// that binds it (embedding, the tied LM head, AdamW, the gradient norm) binds it in row pieces,
// one dispatch each. A tensor that fits is one piece: the dispatches are the unsplit ones.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/device_plan.h"
#include "runtime/executor.h"

namespace remat::kernels {

struct Piece {
  uint32_t begin, count;  // rows [begin, begin + count)
};

// `rows` rows of `row_bytes` each, in as few pieces as fit quirks.max_binding_bytes (0: no
// limit), every piece starting on a 256-byte boundary (the largest minStorageBufferOffsetAlignment
// Vulkan permits) from the tensor's start. std::invalid_argument naming `what` when even the
// smallest aligned piece does not fit.
std::vector<Piece> binding_pieces(const DeviceQuirks& quirks, uint64_t rows, uint64_t row_bytes,
                                  const char* what);

// Element ranges of a tensor of `count` floats (rows of one float).
inline std::vector<Piece> element_pieces(const DeviceQuirks& quirks, uint64_t count,
                                         const char* what) {
  return binding_pieces(quirks, count, sizeof(float), what);
}

// The bytes of rows [p.begin, p.begin + p.count) of `whole`.
inline BufferSlice piece_of(BufferSlice whole, const Piece& p, uint64_t row_bytes) {
  return {whole.buffer, whole.offset + p.begin * row_bytes, p.count * row_bytes};
}

}  // namespace remat::kernels

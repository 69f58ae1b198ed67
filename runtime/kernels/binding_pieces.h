// Pieces of a tensor that each fit one of this device's storage-buffer bindings: the pure
// arithmetic of planner/binding_pieces.h at DeviceQuirks::max_binding_bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/binding_pieces.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

using remat::Piece;

// `rows` rows of `row_bytes` each, in as few pieces as fit quirks.max_binding_bytes (0: no
// limit); see remat::binding_pieces.
inline std::vector<Piece> binding_pieces(const DeviceQuirks& quirks, uint64_t rows,
                                         uint64_t row_bytes, const char* what) {
  return remat::binding_pieces(quirks.max_binding_bytes, rows, row_bytes, what);
}

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

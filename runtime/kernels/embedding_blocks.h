// Dispatches for the token embedding of a table kept in a ggml block type (a QLoRA base's
// token_embd): x = the decoded rows of the tokens (bit for bit decode_blocks's values,
// formats/gguf_blocks.h) plus GPT-2's position rows, or times Gemma's scale: the bits
// embedding_forward gives on the decoded table. The table is frozen: there is no backward
// dispatch.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

struct EmbeddingBlocksShape {
  uint32_t rows = 0;       // BT
  uint32_t C = 0;          // a whole number of the type's blocks
  uint32_t V = 0;          // rows of the table
  uint32_t ggml_type = 0;  // the table's block type (gguf_block_ids.h)
  uint32_t T = 1;          // positions per sequence (row r is position r % T unless packed)
  float scale = 1.0f;      // without a position table: x = decoded · scale (Gemma: sqrt(C))
};

// x[rows, C] (f32) from tokens[rows] (u32) and `table`, V rows of C values in whole blocks,
// packed (padded to whole 4-byte words). A table larger than one binding is bound in pieces of
// whole rows, one dispatch each; together they write every element of x once. Tokens >= V give
// NaN rows. A `wpe` slice (f32 rows of C, GPT-2's position table) is added, row r % T or
// `positions`[r] (packed rows, [rows] u32); an empty wpe means none and s.scale multiplies.
// std::invalid_argument for a type the GPU does not decode, C not whole blocks, or short slices.
std::vector<Dispatch> embedding_blocks_forward(const DeviceQuirks& quirks,
                                               const EmbeddingBlocksShape& s, BufferSlice tokens,
                                               BufferSlice table, BufferSlice x,
                                               BufferSlice wpe = {}, BufferSlice positions = {});

}  // namespace remat::kernels

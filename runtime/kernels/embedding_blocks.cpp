#include "runtime/kernels/embedding_blocks.h"

#include <stdexcept>
#include <string>

#include "embedding_blocks_params.h"
#include "runtime/kernels/binding_pieces.h"
#include "runtime/kernels/dequantize_blocks.h"

namespace remat::kernels {

namespace {

constexpr uint32_t kGroup = 256;

}  // namespace

std::vector<Dispatch> embedding_blocks_forward(const DeviceQuirks& quirks,
                                               const EmbeddingBlocksShape& s, BufferSlice tokens,
                                               BufferSlice table, BufferSlice x, BufferSlice wpe,
                                               BufferSlice positions) {
  const std::string who = "embedding_blocks (ggml type " + std::to_string(s.ggml_type) + ")";
  const std::optional<GpuBlockLayout> layout = gpu_block_layout(s.ggml_type);
  if (!layout || layout->values == 1)
    throw std::invalid_argument(who + ": not a block format the GPU decodes");
  if (s.C == 0 || s.C % layout->values != 0)
    throw std::invalid_argument(who + ": rows of " + std::to_string(s.C) +
                                " values are not whole blocks");
  const uint64_t row_bytes = uint64_t(s.C) / layout->values * layout->bytes;
  const uint64_t table_bytes = (uint64_t(s.V) * row_bytes + 3) / 4 * 4;
  const bool with_wpe = wpe.buffer != VK_NULL_HANDLE;
  const bool packed = positions.buffer != VK_NULL_HANDLE;
  if (table.size < table_bytes || x.size < uint64_t(s.rows) * s.C * 4 ||
      tokens.size < s.rows * 4ull || (with_wpe && wpe.size < uint64_t(s.T) * s.C * 4) ||
      (packed && positions.size < s.rows * 4ull) || s.T == 0)
    throw std::invalid_argument(who + ": a slice is shorter than the shape needs");
  std::vector<Dispatch> out;
  for (const Piece& piece : binding_pieces(quirks, s.V, row_bytes, "the token embedding")) {
    // Whole words: a piece may end inside a word whose other bytes begin the next row.
    const uint64_t begin = uint64_t(piece.begin) * row_bytes;
    const uint64_t size =
        std::min((uint64_t(piece.count) * row_bytes + 3) / 4 * 4, table.size - begin);
    Dispatch d;
    d.kernel = KernelId::embedding_blocks;
    d.spec = {kGroup, 1, 1, s.ggml_type};
    const BufferSlice rows{table.buffer, table.offset + begin, size};
    // Without a position table or packed rows, other read-only bindings stand in, never read.
    d.bindings = {{tokens, false},
                  {rows, false},
                  {with_wpe ? wpe : rows, false},
                  {x, true},
                  {packed ? positions : tokens, false}};
    d.push = push_bytes(push::EmbeddingBlocksParams{s.rows, s.T, s.C, s.V, uint32_t(row_bytes),
                                                    piece.begin, piece.count, with_wpe ? 1u : 0u,
                                                    packed ? 1u : 0u, s.scale});
    d.groups = {grid_stride_groups(uint64_t(s.rows) * s.C / 4, kGroup), 1, 1};
    d.label = "embedding_blocks";
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace remat::kernels

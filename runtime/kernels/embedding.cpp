#include "runtime/kernels/embedding.h"

#include "embedding_params.h"
#include "runtime/kernels/binding_pieces.h"
#include "runtime/kernels/kernel_variants.h"
#include "runtime/kernels/vec4_texels.h"

namespace remat::kernels {

namespace {

constexpr uint32_t kForwardGroup = 256;
constexpr uint32_t kBackwardGroup = 32;  // C channels only: small groups spread them over cores

// wte's rows of `t` elements in pieces that each fit one binding (see binding_pieces.h).
std::vector<Piece> vocab_pieces(const DeviceQuirks& q, uint32_t V, uint32_t C, DType t) {
  return binding_pieces(q, V, uint64_t(C) * dtype_bytes(t), "embedding");
}

BufferSlice rows_of(BufferSlice table, const Piece& p, uint32_t C, DType t) {
  return piece_of(table, p, uint64_t(C) * dtype_bytes(t));
}

}  // namespace

std::vector<Dispatch> embedding_forward(const DeviceQuirks& quirks, const EmbeddingShape& s,
                                        BufferSlice tokens, BufferSlice wte, BufferSlice wpe,
                                        BufferSlice x, BufferSlice row_positions) {
  std::vector<Dispatch> out;
  const uint32_t rows = s.B * s.T;
  const bool positions = wpe.buffer != VK_NULL_HANDLE;
  const bool packed = row_positions.buffer != VK_NULL_HANDLE;
  for (const Piece& piece : vocab_pieces(quirks, s.V, s.C, s.table_dtype)) {
    Dispatch d;
    const BufferSlice table = rows_of(wte, piece, s.C, s.table_dtype);
    const BufferSlice pos_table = positions ? wpe : table;
    // Texel views of whole rows: f32 tables and x, C a multiple of 4, both tables on texel
    // boundaries (the piece starts on a row, C floats after the table's start).
    const bool texel = s.table_dtype == DType::f32 && s.x_dtype == DType::f32 &&
                       vec4_texels_apply(quirks, {table}, uint64_t(piece.count) * s.C) &&
                       vec4_texels_apply(quirks, {pos_table}, pos_table.size / 16 * 4) &&
                       s.C % 4 == 0;
    d.kernel =
        texel ? KernelId::embedding_forward_texels
              : kernel_variant(KernelId::embedding_forward, {DType::f32, s.table_dtype, s.x_dtype});
    d.spec = {kForwardGroup};
    if (texel)
      d.bindings = {{tokens, false},
                    vec4_texels(table, uint64_t(piece.count) * s.C),
                    vec4_texels(pos_table, pos_table.size / 16 * 4),
                    {x, true},
                    {packed ? row_positions : tokens, false}};
    else
      d.bindings = {{tokens, false},
                    {table, false},
                    {pos_table, false},
                    {x, true},
                    {packed ? row_positions : tokens, false}};
    d.push = push_bytes(push::EmbeddingParams{rows, s.T, s.C, s.V, piece.begin, piece.count,
                                              positions ? 1u : 0u, packed ? 1u : 0u, s.scale});
    // One invocation per float, or per four channels for the texel variant.
    d.groups = {grid_stride_groups(uint64_t(rows) * s.C / (texel ? 4 : 1), kForwardGroup), 1, 1};
    d.label = "embedding_forward";
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<Dispatch> embedding_backward(const DeviceQuirks& quirks, const EmbeddingShape& s,
                                         BufferSlice tokens, BufferSlice dx, BufferSlice dwte,
                                         BufferSlice dwpe, bool accumulate_wte, bool accumulate_wpe,
                                         BufferSlice row_positions) {
  std::vector<Dispatch> out;
  const uint32_t rows = s.B * s.T;
  const bool positions = dwpe.buffer != VK_NULL_HANDLE;
  const bool packed = row_positions.buffer != VK_NULL_HANDLE;
  const auto pieces = vocab_pieces(quirks, s.V, s.C, DType::f32);  // gradients are f32
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    // Only the first piece's dispatch includes the dwpe invocations, and only with positions.
    const bool first = i == 0 && positions;
    Dispatch d;
    // Four channels per invocation, dx read through a texel view: C a multiple of 4 and dx on a
    // texel boundary (the gradients are vec4-aligned rows then).
    const bool texel = s.C % 4 == 0 && vec4_texels_apply(quirks, {dx}, uint64_t(rows) * s.C);
    d.kernel = texel ? KernelId::embedding_backward_texels : KernelId::embedding_backward;
    d.spec = {kBackwardGroup};
    // Without positions dx stands in for dwpe: bound read-only, never touched.
    d.bindings = {{tokens, false},
                  texel ? vec4_texels(dx, uint64_t(rows) * s.C) : Binding{dx, false},
                  {rows_of(dwte, pieces[i], s.C, DType::f32), true},
                  {positions ? dwpe : dx, first},
                  {packed ? row_positions : tokens, false}};
    d.push = push_bytes(push::EmbeddingBackwardParams{
        rows, s.T, s.C, s.ctx, pieces[i].begin, pieces[i].count, accumulate_wte ? 1u : 0u,
        accumulate_wpe ? 1u : 0u, packed ? 1u : 0u, s.scale});
    // dwte channels, then (first piece) dwpe channels, each range starting on a group boundary.
    d.groups = {div_up(texel ? s.C / 4 : s.C, kBackwardGroup) * (first ? 2 : 1), 1, 1};
    d.label = "embedding_backward";
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace remat::kernels

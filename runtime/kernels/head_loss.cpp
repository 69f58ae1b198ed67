#include "runtime/kernels/head_loss.h"

#include <algorithm>
#include <stdexcept>

#include "runtime/kernels/act_variant.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/matmul_backward.h"
#include "runtime/kernels/matmul_blocks.h"

namespace remat::kernels {

namespace {

// Chunk `i`'s rows of a tensor with `row_bytes` per row.
BufferSlice rows_of(BufferSlice whole, const HeadLossShape& s, uint32_t i, uint64_t row_bytes) {
  const uint64_t begin = uint64_t{i} * s.chunk_rows;
  const uint64_t count = std::min<uint64_t>(s.chunk_rows, s.rows - begin);
  return {whole.buffer, whole.offset + begin * row_bytes, count * row_bytes};
}

uint32_t rows_in(const HeadLossShape& s, uint32_t i) {
  return std::min(s.chunk_rows, s.rows - i * s.chunk_rows);
}

MatmulShape chunk_matmul(const HeadLossShape& s, uint32_t i) {
  MatmulShape m;
  m.M = rows_in(s, i);
  m.N = s.V;
  m.K = s.C;
  m.layout = WeightLayout::out_in;
  m.w_dtype = s.w_dtype;
  m.x_dtype = s.x_dtype;  // the logits (y) stay f32
  return m;
}

void check(const HeadLossShape& s) {
  if (s.rows == 0 || s.C == 0 || s.V == 0 || s.chunk_rows == 0)
    throw std::logic_error("head_loss: empty shape or chunk");
}

void append(std::vector<Dispatch>& out, std::vector<Dispatch> ds) {
  for (Dispatch& d : ds) out.push_back(std::move(d));
}

// The chunk's logits into `ws` (f32), rounded to x's storage type when that is 16-bit.
void logits_of(std::vector<Dispatch>& out, const DeviceQuirks& quirks, const HeadLossShape& s,
               const MatmulShape& m, BufferSlice xs, BufferSlice w, BufferSlice ws) {
  if (s.w_block_type)
    append(out, matmul_blocks_forward_pieces(quirks, m, *s.w_block_type, xs, w, {}, ws));
  else
    append(out, matmul_forward_pieces(quirks, m, xs, w, {}, ws));
  if (s.x_dtype != DType::f32) out.push_back(round_to_act(m.M * s.V, ws, s.x_dtype));
}

uint64_t x_row_bytes(const HeadLossShape& s) {
  return uint64_t{s.C} * dtype_bytes(s.x_dtype);
}

}  // namespace

std::vector<Dispatch> head_loss_forward(const DeviceQuirks& quirks, const HeadLossShape& s,
                                        BufferSlice x, BufferSlice w, BufferSlice targets,
                                        BufferSlice losses, BufferSlice logits) {
  check(s);
  std::vector<Dispatch> out;
  for (uint32_t i = 0; i < s.chunks(); ++i) {
    const MatmulShape m = chunk_matmul(s, i);
    const BufferSlice ws{logits.buffer, logits.offset, uint64_t{m.M} * s.V * 4};
    logits_of(out, quirks, s, m, rows_of(x, s, i, x_row_bytes(s)), w, ws);
    out.push_back(cross_entropy_forward(quirks, {m.M, s.V}, ws, rows_of(targets, s, i, 4),
                                        rows_of(losses, s, i, 4)));
  }
  return out;
}

std::vector<Dispatch> head_loss_backward(const DeviceQuirks& quirks, const HeadLossShape& s,
                                         BufferSlice x, BufferSlice w, BufferSlice targets,
                                         BufferSlice dx, BufferSlice dw, BufferSlice dlogits,
                                         const LossScale& scale, GradWrite dx_mode,
                                         GradWrite dw_mode) {
  check(s);
  std::vector<Dispatch> out;
  for (uint32_t i = 0; i < s.chunks(); ++i) {
    const MatmulShape m = chunk_matmul(s, i);
    const BufferSlice ws{dlogits.buffer, dlogits.offset, uint64_t{m.M} * s.V * 4};
    const BufferSlice xs = rows_of(x, s, i, x_row_bytes(s));
    logits_of(out, quirks, s, m, xs, w, ws);
    // Per-row scales follow the chunk: its first row's scale is the chunk start's.
    LossScale chunk_scale = scale;
    if (scale.per_row) chunk_scale.word += i * s.chunk_rows;
    out.push_back(
        cross_entropy_backward(quirks, {m.M, s.V}, ws, rows_of(targets, s, i, 4), ws, chunk_scale));
    const BufferSlice dxs = rows_of(dx, s, i, uint64_t{s.C} * 4);
    if (s.w_block_type)
      append(out,
             matmul_blocks_backward_input_pieces(quirks, m, *s.w_block_type, ws, w, dxs, dx_mode));
    else
      append(out, matmul_backward_input_pieces(quirks, m, ws, w, dxs, dx_mode));
    if (dw.buffer == VK_NULL_HANDLE) continue;
    if (s.w_block_type) throw std::logic_error("head_loss: a block weight is frozen (no dW)");
    append(out, matmul_backward_weight_pieces(quirks, m, ws, xs, dw,
                                              i == 0 ? dw_mode : GradWrite::accumulate));
  }
  return out;
}

}  // namespace remat::kernels

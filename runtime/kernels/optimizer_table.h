// The optimizer step in few dispatches: one AdamW and one gradient-norm dispatch per binding
// window instead of one of each per parameter tensor (and per piece of one).
//
// Every parameter tensor is cut into the element pieces that fit one binding
// (binding_pieces.h), exactly as the per-tensor dispatches of optimizer.h cut it; the pieces, in
// order, form a table of push::OptimizerPiece entries that the session uploads once (the plan
// is static). Consecutive pieces whose params, gradients and moments each lie within one binding
// of the same buffers form a window: one adamw_table dispatch and one grad_norm_table dispatch
// bind the four windows and run all of its pieces. A session whose persistent buffer fits one
// binding (any model on a GPU, `tiny` on lavapipe) has one window; GPT-2 small on lavapipe, whose
// 124M parameters span ~470 MiB per operand against 128 MiB per binding, has a few.
//
// The bits are those of optimizer.h's dispatches: AdamW is elementwise with the same expressions
// (adamw_update.glsl), and each piece's partial sums go to the same range of the partials buffer
// (grad_norm_layout over the same pieces in the same order) summed in the same order
// (grad_norm_partial.glsl), so grad_norm_finalize sees the same floats.
#pragma once

#include <span>
#include <vector>

#include "optimizer_params.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

// One parameter tensor AdamW updates: param, grad, m and v each hold `count` floats.
struct OptimizerTensor {
  BufferSlice param, grad, m, v;
  uint64_t count = 0;
  bool weight_decay = false;  // 2-D tensors (GPT-2 convention)
};

// The table entries [first, first + pieces) and what their two dispatches bind.
struct OptimizerWindow {
  uint32_t first = 0;
  uint32_t pieces = 0;
  BufferSlice param, grad, m, v;  // from the first piece's operand to the end of the last one's
  BufferSlice partials;           // the pieces' ranges of the partials buffer
  bool adamw_texels = false;      // adamw_table_texels.comp (else adamw_table.comp)
  bool norm_texels = false;       // grad_norm_table_texels.comp (else grad_norm_table.comp)
  uint32_t adamw_groups = 0;      // workgroups of each dispatch
  uint32_t norm_groups = 0;
};

struct OptimizerTable {
  std::vector<push::OptimizerPiece> pieces;  // the contents of the table buffer
  std::vector<OptimizerWindow> windows;
  uint32_t partials_floats = 0;  // of the partials buffer: grad_norm_partials_floats's count
};

// The table for `tensors` in the order the plan gives them (its parameter gradients' order is
// the gradient norm's), with their partial sums laid out from the start of `partials`.
OptimizerTable optimizer_table(const DeviceQuirks& quirks, std::span<const OptimizerTensor> tensors,
                               BufferSlice partials);

// The gradient norm of every window into `result` (grad_norm_table per window, then one
// grad_norm_finalize over all partial sums, as optimizer.h's grad_norm). `table` holds t.pieces.
std::vector<Dispatch> grad_norm_table(const DeviceQuirks& quirks, const OptimizerTable& t,
                                      BufferSlice table, BufferSlice partials, float max_norm,
                                      BufferSlice result);

// AdamW over every window (one dispatch each). `clip` as for optimizer.h's adamw.
std::vector<Dispatch> adamw_table(const OptimizerTable& t, BufferSlice table, BufferSlice hyper,
                                  BufferSlice clip);

}  // namespace remat::kernels

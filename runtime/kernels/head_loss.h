// Dispatches for the chunked LM head and loss (head_loss / head_loss_backward, docs/ops.md):
// loops over row chunks of x[rows, C] with one [chunk, V] workspace, composed from the matmul
// and cross-entropy kernels, so the full [rows, V] logits never exist.
#pragma once

#include <optional>

#include <vector>

#include "graph/tensor.h"
#include "runtime/kernels/cross_entropy.h"
#include "runtime/kernels/grad_write.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

struct HeadLossShape {
  uint32_t rows = 0;           // BT
  uint32_t C = 0;              // x's width
  uint32_t V = 0;              // vocabulary (the weight is [V, C])
  uint32_t chunk_rows = 0;     // rows per chunk; chunk starts must keep bindings aligned
  DType w_dtype = DType::f32;  // the weight's storage (a frozen head may be f16 or bf16)
  // x's storage. The logits workspaces are f32; with 16-bit x they are rounded to x's type
  // before the loss reads them, as a stored logits tensor would be.
  DType x_dtype = DType::f32;
  // A frozen head kept in a ggml block type (a QLoRA base): its type; the matmuls are then the
  // block matmuls (matmul_blocks.h), w_dtype f32 and x f32.
  std::optional<uint32_t> w_block_type;
  uint32_t chunks() const { return (rows + chunk_rows - 1) / chunk_rows; }
};

// Per chunk: logits = x_chunk · Wᵀ into `logits`, then losses of the chunk's rows (0 where the
// target is ignored). Every loss is the unchunked row's loss, bit for bit: rows are independent.
std::vector<Dispatch> head_loss_forward(const DeviceQuirks& quirks, const HeadLossShape& s,
                                        BufferSlice x, BufferSlice w, BufferSlice targets,
                                        BufferSlice losses, BufferSlice logits);

// Per chunk: recompute the logits into `dlogits`, turn them into dlogits in place (the kernel
// reads each element before writing it), dx rows (+)= dlogits · W as `dx_mode` says, and
// dW (+)= dlogitsᵀ · x_chunk: the first chunk as `dw_mode` says, later chunks add. dx rows are
// the unchunked bits; dW sums chunk by chunk, which differs from the unchunked sum over all rows
// only by rounding. A `dw` without a buffer is a frozen weight: no dW dispatch at all, and
// `dw_mode` is not read.
std::vector<Dispatch> head_loss_backward(const DeviceQuirks& quirks, const HeadLossShape& s,
                                         BufferSlice x, BufferSlice w, BufferSlice targets,
                                         BufferSlice dx, BufferSlice dw, BufferSlice dlogits,
                                         const LossScale& scale, GradWrite dx_mode,
                                         GradWrite dw_mode);

}  // namespace remat::kernels

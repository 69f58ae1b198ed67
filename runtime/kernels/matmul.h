// Dispatches for the matmul kernels (Linear layers and the tied LM head).
#pragma once

#include <vector>

#include "graph/tensor.h"
#include "runtime/kernels/binding_pieces.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

enum class WeightLayout : uint32_t { in_out = 0, out_in = 1 };  // [K,N] or [N,K]

struct MatmulShape {
  uint32_t M = 0, N = 0, K = 0;
  WeightLayout layout = WeightLayout::in_out;
  // The N-wide side (forward: out and bias; backward: dout) is columns [n_offset, n_offset + N)
  // of a row-major matrix whose rows are `ld` floats apart; ld 0 means N (the whole matrix).
  // Set for one piece of a weight bound in pieces; W and dW are always the piece's own.
  uint32_t ld = 0;
  uint32_t n_offset = 0;
  // W's storage (kernel_variants.h): a frozen base may be f16 or bf16; x, out and dout are f32.
  DType w_dtype = DType::f32;
  // The activations' storage (act16.glsl): inp, and out (the chunked head's logits stay f32).
  // dout, dinp and dW are gradients, always f32.
  DType x_dtype = DType::f32;
  DType y_dtype = DType::f32;
  uint32_t row_stride() const { return ld ? ld : N; }
  // Bytes of one row of an (out, in) weight [N,K]: the unit its binding pieces are cut in.
  uint64_t w_row_bytes() const { return uint64_t(K) * dtype_bytes(w_dtype); }
};

// out[M,N] = inp[M,K] · W + bias. `bias` may be {} (no bias); a dummy binding is then made
// from `w`, which the kernel never reads.
Dispatch matmul_forward(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice inp,
                        BufferSlice w, BufferSlice bias, BufferSlice out);

// Rows of an (out, in) weight [N,K] in pieces that each fit one binding: one piece, the whole
// weight, when it fits (see binding_pieces.h). An (in, out) weight is always one piece.
std::vector<Piece> weight_pieces(const DeviceQuirks& quirks, const MatmulShape& s);
// The shape of piece `p` of `whole`: p.count columns at n_offset + p.begin of whole's N-wide side.
MatmulShape piece_shape(const MatmulShape& whole, const Piece& p);

// matmul_forward with W bound in weight_pieces: one dispatch per piece, each writing its columns
// of `out` (whole, [M,N]). Exactly matmul_forward's one dispatch when W fits. GPT-2's tied head
// (wte, 154 MB) needs three pieces under lavapipe's 128 MiB binding limit.
std::vector<Dispatch> matmul_forward_pieces(const DeviceQuirks& quirks, const MatmulShape& s,
                                            BufferSlice inp, BufferSlice w, BufferSlice bias,
                                            BufferSlice out, BufferSlice residual = {});

// `matmul` (dispatches that write `out`, [M,N] whole) then out = residual + out, as
// residual_forward computes it, in place: a matmul with a fused residual (docs/ops.md) where its
// kernel does not add the residual itself.
std::vector<Dispatch> then_add_residual(const DeviceQuirks& quirks, const MatmulShape& s,
                                        std::vector<Dispatch> matmul, BufferSlice residual,
                                        BufferSlice out);

}  // namespace remat::kernels

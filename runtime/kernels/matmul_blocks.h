// Dispatches for the matmuls of a frozen base weight stored in a ggml block type (QLoRA): W is
// [N,K] (out, in; WeightLayout::out_in, one W row = one GGUF row of K values in whole blocks),
// decoded on the device where the kernel reads it (shaders/gguf_blocks.glsl). The two products
// a frozen weight needs: the forward out = inp · Wᵀ (+ bias) and the input gradient
// dinp (+)= dout · W; a frozen weight has no dW.
//
// Same bits as the f32 kernels on the decoded W: every output is the fma chain of
// matmul_forward / matmul_backward_input (matmul.h, matmul_backward.h) and of their texel
// variants (matmul_texels.h), which all compute it alike: over the reduction in ascending order
// from 0, the bias or an accumulated gradient added after the chain. Decoding replaces only how
// W's values are fetched (gguf_blocks.glsl's values are formats/gguf_blocks.h's decode_blocks,
// bit for bit). tests/kernels/matmul_blocks_test.cpp compares them bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/kernels/binding_pieces.h"
#include "runtime/kernels/grad_write.h"
#include "runtime/kernels/matmul.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

// Whether the block matmuls read ggml type `ggml_type` (gguf_block_ids.h ids): Q8_0, Q4_0,
// Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K. (F16 and BF16 weights are MatmulShape's
// w_dtype on the ordinary kernels.)
bool matmul_blocks_reads(uint32_t ggml_type);

// Bytes of one W row: K values of `ggml_type` in whole blocks. std::invalid_argument when the
// type is not one the block matmuls read or K is not a whole number of its blocks.
uint64_t block_row_bytes(uint32_t ggml_type, uint32_t K);

// The shape `s` (M, N, K, and the N-wide side's ld and n_offset as in MatmulShape) must be
// out_in with f32 activations; w_dtype is not read and stays f32 (the weight's storage is
// `ggml_type`). `w_blocks` holds W's N rows packed, N * block_row_bytes bytes, padded to whole
// 4-byte words (the kernels read words). std::invalid_argument otherwise. On CPU drivers
// (texel_fetch_beats_storage_loads) the kernels read W through 16-byte texels where the slice
// reaches a whole texel past W's last byte (pad it to 16 bytes), else storage buffers, much
// slower there; the bits are the same.

// out[M,N] = inp[M,K] · Wᵀ + bias; `bias` may be {} (no bias).
Dispatch matmul_blocks_forward(const DeviceQuirks& quirks, const MatmulShape& s, uint32_t ggml_type,
                               BufferSlice inp, BufferSlice w_blocks, BufferSlice bias,
                               BufferSlice out);

// dinp[M,K] (+)= dout[M,N] · W.
Dispatch matmul_blocks_backward_input(const DeviceQuirks& quirks, const MatmulShape& s,
                                      uint32_t ggml_type, BufferSlice dout, BufferSlice w_blocks,
                                      BufferSlice dinp, GradWrite mode);

// Rows of W in pieces that each fit one binding (binding_pieces.h at block_row_bytes): one
// piece when W fits. A piece is whole rows, so whole blocks; each starts 256-byte aligned.
std::vector<Piece> block_weight_pieces(const DeviceQuirks& quirks, const MatmulShape& s,
                                       uint32_t ggml_type);

// The two above with W bound in block_weight_pieces, one dispatch per piece; exactly the single
// dispatch when W fits. As matmul_forward_pieces and matmul_backward_input_pieces do: forward
// pieces write disjoint columns of out; backward pieces continue one sum over n, so an
// overwritten dinp has the unsplit bits and an accumulated one is dinp + (first piece's sum),
// continued (the f32 kernels' bits where their pieces start on the same rows).
std::vector<Dispatch> matmul_blocks_forward_pieces(const DeviceQuirks& quirks, const MatmulShape& s,
                                                   uint32_t ggml_type, BufferSlice inp,
                                                   BufferSlice w_blocks, BufferSlice bias,
                                                   BufferSlice out);
std::vector<Dispatch> matmul_blocks_backward_input_pieces(const DeviceQuirks& quirks,
                                                          const MatmulShape& s, uint32_t ggml_type,
                                                          BufferSlice dout, BufferSlice w_blocks,
                                                          BufferSlice dinp, GradWrite mode);

}  // namespace remat::kernels

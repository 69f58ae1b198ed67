// The storage type of a frozen base (TrainShape::weight_dtype, `--weights-dtype`): LoRA trains
// adapters on weights that never change, so the frozen linear weights and embedding tables (the
// tensors of two or more dimensions) may be stored in f16 or bf16, halving their bytes; the
// kernels widen them to fp32 in registers. Frozen 1-D tensors (norm gains, biases: ~0.1% of the
// bytes) stay f32, as trained parameters, their gradients and AdamW's moments do. Setting the
// dtype on the graph's tensors is what makes the planner count them at their real size.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "graph/model_config.h"
#include "graph/tensor.h"

namespace remat {

// "f32" | "f16" | "bf16"; anything else is std::invalid_argument naming the choices.
DType parse_weight_dtype(std::string_view text);

// std::invalid_argument unless `t` may store the weights of a graph that has frozen ones or not:
// f32 always, f16 and bf16 only with frozen weights (LoRA).
void check_weight_dtype(DType t, bool has_frozen);

// Stores every frozen tensor of two or more dimensions of `g` (after apply_lora) as `t`.
// std::invalid_argument when `t` is not f32 and nothing is frozen (no LoRA), or `t` is not a
// floating-point storage type.
void store_frozen_weights(Graph& g, DType t);

// Stores each weight `blocks` names as its ggml block format (DType::blocks): a frozen 2-D tensor
// of `g` (after apply_lora, before autodiff) whose rows are whole blocks and that only kernels
// decoding blocks read: matmuls reading it [out, in] (forward and input gradient), the token
// embedding (Gemma's scaled one too), GPT-2's position-added embedding with an f32 position
// table, the chunked head and loss. The others named (a matrix some op reads [in, out], GPT-2's
// embedding beside a 16-bit position table) keep their dtype and are returned by name: the caller
// decodes them.
// std::invalid_argument for a name that is not a frozen tensor of `g`, rows that are not whole
// blocks, or 16-bit activations (the block matmuls read f32 activations).
std::vector<std::string> store_block_weights(Graph& g, const std::vector<BlockWeight>& blocks,
                                             DType activation_dtype);

// Whether `weight` is a GPT-2 Conv1D weight (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj:
// [in, out] in Hugging Face files) that `shape` keeps in its GGUF blocks (named in
// block_weights). A GGUF file stores such a matrix as rows along `in` ([out, in], as every
// matrix there), so the graph holds it [out, in] and its matmul reads it as WeightLayout::out_in:
// the block kernels need rows of the reduction. Everything outside the device (files, adapters,
// Session::values) still sees Hugging Face's [in, out].
bool conv1d_held_out_in(const TrainShape& shape, std::string_view weight);

}  // namespace remat

// Tensors of the training graph: what a value is (shape, element type), what it is for (role), and
// which block of the model chain produced it. Pure data; placement is the planner's business.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace remat {

using TensorId = int32_t;
inline constexpr TensorId kNoTensor = -1;

// Element types the kernels know. u32 is for token ids and targets. blocks: a frozen weight kept
// in one of ggml's block types (QLoRA; Tensor::blocks says which), decoded where a kernel reads it.
enum class DType { f32, f16, bf16, u32, blocks };

// The storage of a DType::blocks tensor: ggml's block type (its id in the GGUF format, so the
// kernels' decoders know it without reading formats/), each block `block_values` consecutive
// values of a row in `block_bytes` bytes; a row (the last dimension) is whole blocks, and the rows
// are packed one after another, as a GGUF file stores them.
struct BlockFormat {
  uint32_t ggml_type = 0;
  uint32_t block_values = 0;
  uint32_t block_bytes = 0;
  std::string name;  // ggml's name of the type, e.g. "q4_K"
  bool operator==(const BlockFormat&) const = default;
};

// A DType::blocks tensor's bytes end on a multiple of this: the matmuls read a block weight in
// 16-byte texels on CPU drivers (runtime/kernels/matmul_blocks.h), at most 15 bytes more.
inline constexpr uint64_t kBlockTensorPad = 16;

// Bytes of one element; std::logic_error for blocks, whose size is per block (Tensor::bytes).
int dtype_bytes(DType t);
std::string_view dtype_name(DType t);
// "f32" | "f16" | "bf16"; anything else is std::invalid_argument.
DType parse_activation_dtype(std::string_view text);

// Why a tensor exists; decides persistent vs arena placement (docs/ops.md).
enum class Role {
  input,
  parameter,
  parameter_grad,
  optimizer_state,
  activation,
  activation_grad,
  workspace
};

std::string_view role_name(Role r);
// "[768, 2304]": a shape in error messages.
std::string shape_text(const std::vector<int64_t>& shape);
// Inputs, parameters, their gradients and optimizer state live for the whole session.
bool is_persistent_role(Role r);

struct Tensor {
  TensorId id = kNoTensor;       // index into Graph::tensors (or Plan::tensors)
  std::string name;              // HF GPT-2 name for parameters, descriptive otherwise
  std::vector<int64_t> shape;    // row-major
  DType dtype = DType::f32;      // element type
  Role role = Role::activation;  // what it is for
  int block = -1;                // chain block that produces it (-1: no producer block)
  bool persistent = false;  // lives in the persistent buffer for the whole session (else arena)
  BlockFormat blocks;       // how a DType::blocks tensor is stored (else unused)

  int64_t elements() const;
  uint64_t bytes() const;  // exact, unaligned (blocks: padded to kBlockTensorPad)
};

// Rounds up to a multiple of `alignment` (which must be a power of two or any positive value).
uint64_t align_up(uint64_t bytes, uint64_t alignment);

}  // namespace remat

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

// Element types the kernels know. u32 is for token ids and targets.
enum class DType { f32, f16, bf16, u32 };

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

  int64_t elements() const;
  uint64_t bytes() const;  // exact, unaligned
};

// Rounds up to a multiple of `alignment` (which must be a power of two or any positive value).
uint64_t align_up(uint64_t bytes, uint64_t alignment);

}  // namespace remat

#include "graph/tensor.h"

#include <stdexcept>
#include <string>

namespace remat {

int dtype_bytes(DType t) {
  switch (t) {
    case DType::f32:
    case DType::u32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::blocks:
      break;
  }
  throw std::logic_error("a block-stored tensor has no element size");
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::u32:
      return "u32";
    case DType::blocks:
      return "blocks";
  }
  return "?";
}

DType parse_activation_dtype(std::string_view text) {
  if (text == "f32") return DType::f32;
  if (text == "f16") return DType::f16;
  if (text == "bf16") return DType::bf16;
  throw std::invalid_argument("unknown activation dtype '" + std::string(text) +
                              "'; use f32, f16 or bf16");
}

std::string_view role_name(Role r) {
  switch (r) {
    case Role::input:
      return "input";
    case Role::parameter:
      return "parameter";
    case Role::parameter_grad:
      return "parameter_grad";
    case Role::optimizer_state:
      return "optimizer_state";
    case Role::activation:
      return "activation";
    case Role::activation_grad:
      return "activation_grad";
    case Role::workspace:
      return "workspace";
  }
  return "?";
}

bool is_persistent_role(Role r) {
  return r == Role::input || r == Role::parameter || r == Role::parameter_grad ||
         r == Role::optimizer_state;
}

int64_t Tensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

uint64_t Tensor::bytes() const {
  const auto n = static_cast<uint64_t>(elements());
  if (dtype != DType::blocks) return n * static_cast<uint64_t>(dtype_bytes(dtype));
  if (blocks.block_values == 0 || shape.empty() || shape.back() % blocks.block_values != 0)
    throw std::logic_error("'" + name + "': rows of " + std::to_string(shape.back()) +
                           " values are not whole blocks of " + blocks.name);
  return align_up(n / blocks.block_values * blocks.block_bytes, kBlockTensorPad);
}

uint64_t align_up(uint64_t bytes, uint64_t alignment) {
  if (alignment <= 1) return bytes;
  return (bytes + alignment - 1) / alignment * alignment;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string o = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) o += (i ? ", " : "") + std::to_string(shape[i]);
  return o + "]";
}

}  // namespace remat

// Which compiled kernel reads and writes operands of which storage types. A kernel whose
// operands may be stored in 16 bits has one wrapper .comp per combination that exists, over one
// shared body (shaders/operand_storage.glsl, shaders/texel_operands.glsl); this table maps an
// all-f32 kernel and its operands' dtypes to that wrapper, so the lowering chooses variants from
// the plan's tensor dtypes alone. A new storage type (a block-quantised weight, say) is new
// wrapper files and rows here plus its texel format.
#pragma once

#include <vulkan/vulkan_core.h>

#include "graph/tensor.h"
#include "remat_shaders/kernel_id.h"
#include "runtime/vulkan/texel_format.h"

namespace remat::kernels {

// Storage types of a kernel's operands by position, as shaders/operand_storage.glsl names them:
// a the first operand read (x, dy), b the second (the weight; texel matmuls: Y), c the result.
struct OperandTypes {
  DType a = DType::f32;
  DType b = DType::f32;
  DType c = DType::f32;
  bool operator==(const OperandTypes&) const = default;
};

// The kernel that runs `base` (an all-f32 kernel) on operands of `types`: `base` itself for all
// f32. std::invalid_argument naming the kernel and the types when no variant exists.
KernelId kernel_variant(KernelId base, OperandTypes types);

// The view format of an operand of dtype `t` read through a texel view, four elements per texel
// (vec4) or one: f32 RGBA32F / R32F; f16 RGBA16F / R16F (the view widens it); bf16 RGBA16UI /
// R16UI (the kernel shifts it, its *_ybf16 variant).
VkFormat texel_format(DType t, bool vec4);

// Bytes of one texel of those formats (runtime/vulkan/texel_format.h).
using remat::texel_format_bytes;

}  // namespace remat::kernels

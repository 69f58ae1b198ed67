// Kernels that store activations come in one variant per storage type, each a .comp file
// (shaders/act16.glsl): `name`, `name_f16`, `name_bf16`. The lowering passes the plan tensors'
// dtype; the variant follows from it alone.
#pragma once

#include "graph/tensor.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

struct ActVariants {
  KernelId f32, f16, bf16;
};

// The variant for activations stored as `act` (f32, f16 or bf16).
KernelId act_variant(DType act, const ActVariants& v);

// x[i] = widen(narrow(x[i])) for i < count: f32 values rounded to what `act` (f16 or bf16)
// stores.
Dispatch round_to_act(uint32_t count, BufferSlice x, DType act);

}  // namespace remat::kernels

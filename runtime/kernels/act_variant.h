// Kernels that store activations come in one variant per storage type, each a .comp file
// (shaders/act16.glsl): `name`, `name_f16`, `name_bf16`. The lowering passes the plan tensors'
// dtype; the variant follows from it alone.
#pragma once

#include "graph/tensor.h"
#include "runtime/executor.h"

namespace remat::kernels {

struct ActVariants {
  KernelId f32, f16, bf16;
};

// The variant for activations stored as `act` (f32, f16 or bf16).
KernelId act_variant(DType act, const ActVariants& v);

// Bytes of one stored activation element.
inline uint64_t act_bytes(DType act) {
  return static_cast<uint64_t>(dtype_bytes(act));
}

}  // namespace remat::kernels

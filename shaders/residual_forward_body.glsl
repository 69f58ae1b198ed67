// Included by residual_forward.comp and its f16/bf16 wrappers (act16.glsl: a, b, y are
// activations).
#include "act16.glsl"
#include "residual_params.h"

// y = a + scale * b: the residual connection (scale 1) or a LoRA merge (scale alpha/r).
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { ACT_T a[]; };
layout(std430, binding = 1) readonly buffer B { ACT_T b[]; };
layout(std430, binding = 2) writeonly buffer Y { ACT_T y[]; };
layout(push_constant) uniform Push { ResidualParams p; };

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    // precise: no fused multiply-add, so the bits equal the reference's product then sum.
    precise float v = LOAD_ACT(a[i]) + p.scale * LOAD_ACT(b[i]);
    y[i] = STORE_ACT(v);
  }
}

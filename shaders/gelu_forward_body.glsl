// Included by gelu_forward.comp and its f16/bf16 wrappers (act16.glsl: x and y are activations).
// y = gelu(x) (gelu.glsl), one element per iteration through storage buffers.
#include "act16.glsl"
#include "gelu_params.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { ACT_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { ACT_T y[]; };
layout(push_constant) uniform Push { GeluParams p; };

#include "gelu.glsl"

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride)
    y[i] = STORE_ACT(gelu(LOAD_ACT(x[i])));
}

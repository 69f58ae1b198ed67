// Included by dropout_forward.comp and its f16/bf16 wrappers (act16.glsl: x and y are
// activations).
#include "act16.glsl"
#include "dropout_params.h"

// y = x * mask / (1 - p), the mask drawn from Philox4x32-10 keyed by (seed, step, op id,
// element) as described in dropout_params.h. One Philox call yields 4 words, so an invocation
// handles 4 consecutive elements (grid-stride over groups of 4).
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { ACT_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { ACT_T y[]; };
layout(std430, binding = 2) readonly buffer Steps { uint steps[]; };
layout(push_constant) uniform Push { DropoutParams p; };

#include "philox.glsl"

void main() {
  uint quads = (p.count + 3) / 4;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  uint step = p.step + (p.step_from_buffer != 0 ? steps[p.step_word] : 0u);
  for (uint q = gl_GlobalInvocationID.x; q < quads; q += stride) {
    uvec4 r = philox4x32_10(uvec4(q, step, p.op_id, 0u), uvec2(p.seed_lo, p.seed_hi));
    for (uint j = 0; j < 4; ++j) {
      uint i = q * 4 + j;
      if (i >= p.count) break;
      y[i] = STORE_ACT(r[j] < p.threshold ? 0.0 : LOAD_ACT(x[i]) * p.scale);
    }
  }
}

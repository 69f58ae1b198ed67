// Included by round_act_f16.comp and round_act_bf16.comp: rounds fp32 values in place to the
// activation storage type and back, x[i] = widen(narrow(x[i])). The chunked LM head keeps a
// chunk's logits in an fp32 workspace (the backward turns them into dlogits in place); rounding
// them gives the cross-entropy exactly the values a 16-bit logits tensor would hold.
#include "act16.glsl"
#include "round_params.h"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform Push { RoundParams p; };

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride)
    x[i] = ACT_WIDEN(ACT_NARROW(x[i]));
}

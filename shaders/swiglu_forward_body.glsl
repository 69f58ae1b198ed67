// Included by swiglu_forward.comp and its f16/bf16 wrappers (act16.glsl: g, u and h are
// activations).
#include "act16.glsl"
#include "swiglu_params.h"
#include "swiglu.glsl"
#include "gelu.glsl"

// Llama's MLP activation (Shazeer 2020): h = silu(g) * u, g and u the gate and up projections;
// Gemma's GeGLU takes GPT-2's GELU for silu (p.gelu_gate).
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer G { ACT_T g[]; };
layout(std430, binding = 1) readonly buffer U { ACT_T u[]; };
layout(std430, binding = 2) writeonly buffer H { ACT_T h[]; };
layout(push_constant) uniform Push { SwigluParams p; };

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    float v = LOAD_ACT(g[i]);
    h[i] = STORE_ACT((p.gelu_gate != 0 ? gelu(v) : silu(v)) * LOAD_ACT(u[i]));
  }
}

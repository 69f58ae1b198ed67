// Included by swiglu_backward.comp and its f16/bf16 wrappers (act16.glsl: g and u are
// activations; dh, dg and du gradients, always fp32).
#include "act16.glsl"
#include "swiglu_params.h"
#include "swiglu.glsl"
#include "gelu.glsl"

// dg = dh * u * silu'(g), du = dh * silu(g). With e = exp(-g) and s = 1 / (1 + e),
// silu'(g) = s + g s (1 - s) = s (1 + g e s), where 1 - s = e s stays accurate when s is
// close to 1. GeGLU (p.gelu_gate) takes gelu and gelu_grad (gelu.glsl) for silu and silu'.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer DH { float dh[]; };
layout(std430, binding = 1) readonly buffer G { ACT_T g[]; };
layout(std430, binding = 2) readonly buffer U { ACT_T u[]; };
layout(std430, binding = 3) buffer DG { float dg[]; };
layout(std430, binding = 4) buffer DU { float du[]; };
layout(push_constant) uniform Push { SwigluParams p; };

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    float v = LOAD_ACT(g[i]);
    float act, dact;
    if (p.gelu_gate != 0) {
      act = gelu(v);
      dact = gelu_grad(v);
    } else {
      float e = exp_neg(v);
      float s = 1.0 / (1.0 + e);
      dact = s * (1.0 + v * e * s);
      act = silu(v);
    }
    float vg = dh[i] * LOAD_ACT(u[i]) * dact;
    float vu = dh[i] * act;
    dg[i] = p.accumulate_dg != 0 ? dg[i] + vg : vg;
    du[i] = p.accumulate_du != 0 ? du[i] + vu : vu;
  }
}

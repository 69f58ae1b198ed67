#version 450
#extension GL_GOOGLE_include_directive : require
#include "optimizer_params.h"

// AdamW over storage buffers, one float per iteration: the update is in adamw_update.glsl.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer Param { float param[]; };
layout(std430, binding = 1) readonly buffer Grad { float grad[]; };
layout(std430, binding = 2) buffer M1 { float m1[]; };
layout(std430, binding = 3) buffer M2 { float m2[]; };
#include "adamw_update.glsl"
layout(push_constant) uniform Push { AdamWParams p; };

void main() {
  const AdamWFactors f = adamw_factors_for(p.decay, p.clip);
  // Grid-stride loop: tensors larger than 65535 workgroups (the token embedding) still fit one
  // dispatch. Each element is independent, so the order does not matter.
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    float pi = param[i], m = m1[i], v = m2[i];
    adamw_element(f, grad[i], pi, m, v);
    m1[i] = m;
    m2[i] = v;
    param[i] = pi;
  }
}

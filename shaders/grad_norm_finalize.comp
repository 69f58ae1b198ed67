#version 450
#extension GL_GOOGLE_include_directive : require
#include "optimizer_params.h"

// Second stage of the global gradient norm: a single invocation sums partials[0, count) in
// order (compensated, see grad_norm_partial.comp) and writes the norm and the clip scale of
// torch.nn.utils.clip_grad_norm_: min(1, max_norm / (norm + 1e-6)); max_norm 0 means no
// clipping (scale 1). One invocation keeps the order fixed; it reads a few thousand floats.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Partials { float partials[]; };
layout(std430, binding = 1) writeonly buffer Result { GradNormResult result; };
layout(push_constant) uniform Push { GradNormFinalizeParams p; };

void main() {
  if (gl_GlobalInvocationID.x != 0) return;
  precise float sum = 0.0;
  precise float lost = 0.0;
  for (uint i = 0; i < p.count; ++i) {
    precise float y = partials[i] - lost;
    precise float t = sum + y;
    lost = (t - sum) - y;
    sum = t;
  }
  const float norm = sqrt(sum);
  result.norm = norm;
  result.clip_scale = p.max_norm > 0.0 ? min(1.0, p.max_norm / (norm + 1e-6)) : 1.0;
}

#version 450
#extension GL_GOOGLE_include_directive : require
#include "optimizer_params.h"

// AdamW with PyTorch's semantics (torch.optim.AdamW, Loshchilov & Hutter, "Decoupled Weight
// Decay Regularization", ICLR 2019), elementwise and in place:
//   g  = grad * clip_scale
//   p *= 1 - lr * wd                                    (decoupled decay, applied first)
//   m  = beta1 m + (1 - beta1) g
//   v  = beta2 v + (1 - beta2) g^2
//   p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)     (bc = bias corrections, PyTorch's form)
// Hyperparameters come from a storage buffer so a recorded command buffer can be replayed with a
// new learning rate and step. The gradient buffer itself is left unclipped.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer Param { float param[]; };
layout(std430, binding = 1) readonly buffer Grad { float grad[]; };
layout(std430, binding = 2) buffer M1 { float m1[]; };
layout(std430, binding = 3) buffer M2 { float m2[]; };
layout(std430, binding = 4) readonly buffer Hyper { AdamWHyper h; };
layout(std430, binding = 5) readonly buffer Clip { GradNormResult clip; };
layout(push_constant) uniform Push { AdamWParams p; };

void main() {
  const float scale = p.clip != 0 ? clip.clip_scale : 1.0;
  const float decay = p.decay != 0 ? 1.0 - h.lr * h.weight_decay : 1.0;
  const float step_size = h.lr / h.bias_correction1;
  const float bc2_sqrt = sqrt(h.bias_correction2);
  // Grid-stride loop: tensors larger than 65535 workgroups (the token embedding) still fit one
  // dispatch. Each element is independent, so the order does not matter.
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    const float g = grad[i] * scale;
    const float m = h.beta1 * m1[i] + h.one_minus_beta1 * g;
    const float v = h.beta2 * m2[i] + h.one_minus_beta2 * g * g;
    m1[i] = m;
    m2[i] = v;
    const float denom = sqrt(v) / bc2_sqrt + h.eps;
    param[i] = param[i] * decay - step_size * m / denom;
  }
}

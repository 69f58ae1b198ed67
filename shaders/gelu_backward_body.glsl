// Included by gelu_backward.comp and its f16/bf16 wrappers (act16.glsl: x is an activation;
// dy and dx are gradients, always fp32).
#include "act16.glsl"
#include "gelu_params.h"

// dx = dy * gelu'(x) for GPT-2's tanh-approximated GELU. With s = 1 / (1 + exp(-2u)) =
// 0.5 (1 + tanh(u)) (see gelu_forward.comp), gelu(x) = x s and
//   gelu'(x) = s + x * 2 s (1 - s) * du/dx,  du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2),
// where 1 - s = e s with e = exp(-2u), which stays accurate when s is close to 1.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer X { ACT_T x[]; };
layout(std430, binding = 2) buffer DX { float dx[]; };
layout(push_constant) uniform Push { GeluParams p; };

const float SQRT_2_OVER_PI = 0.7978845608028654;  // sqrt(2 / pi)

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    float v = LOAD_ACT(x[i]);
    float u = SQRT_2_OVER_PI * (v + 0.044715 * v * v * v);
    float e = exp(min(-2.0 * u, 80.0));
    float s = 1.0 / (1.0 + e);
    float du = SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * v * v);
    float grad = s + v * 2.0 * s * (e * s) * du;
    float g = dy[i] * grad;
    dx[i] = p.accumulate != 0 ? dx[i] + g : g;
  }
}

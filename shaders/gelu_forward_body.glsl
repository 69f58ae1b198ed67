// Included by gelu_forward.comp and its f16/bf16 wrappers (act16.glsl: x and y are activations).
#include "act16.glsl"
#include "gelu_params.h"

// GPT-2's GELU, the tanh approximation (Hendrycks & Gimpel 2016):
//   gelu(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3).
// Evaluated through the identity 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)): the same function,
// but without the cancellation of 1 + tanh(u) for negative x, where tanh(u) is close to -1 and
// fp32 would keep only a few correct digits of the result.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { ACT_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { ACT_T y[]; };
layout(push_constant) uniform Push { GeluParams p; };

const float SQRT_2_OVER_PI = 0.7978845608028654;  // sqrt(2 / pi)

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    float v = LOAD_ACT(x[i]);
    float u = SQRT_2_OVER_PI * (v + 0.044715 * v * v * v);
    // exp(80) is finite in fp32; beyond it the result is below 1e-34 anyway.
    y[i] = STORE_ACT(v / (1.0 + exp(min(-2.0 * u, 80.0))));
  }
}

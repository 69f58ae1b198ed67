#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_forward_vec4_body.glsl reading inp (the activation) as f16 and a bf16 weight (a frozen
// base stored in 16 bits), the result f32 (the chunked head's logits).
#define A_F16
#define B_BF16
#include "matmul_forward_vec4_body.glsl"

#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_forward_vec4_body.glsl reading inp (the activation) as bf16, the result f32.
#define A_BF16
#include "matmul_forward_vec4_body.glsl"

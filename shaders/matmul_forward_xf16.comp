#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_forward_body.glsl reading inp (the activation) as f16, the result f32.
#define A_F16
#include "matmul_forward_body.glsl"

#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

// matmul_outer_texels_body.glsl reading X (the activation) as bf16, the result f32.
#define A_BF16
#include "matmul_outer_texels_body.glsl"

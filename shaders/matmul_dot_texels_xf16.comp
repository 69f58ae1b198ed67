#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

// matmul_dot_texels_body.glsl reading X (the activation) as f16, the result f32.
#define A_F16
#include "matmul_dot_texels_body.glsl"

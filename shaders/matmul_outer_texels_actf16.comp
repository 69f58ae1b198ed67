#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

// matmul_outer_texels_body.glsl with X (the activation) and the result stored as f16.
#define A_F16
#define C_F16
#include "matmul_outer_texels_body.glsl"

#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

// matmul_outer_texels_body.glsl with X (the activation) and the result stored as bf16, and Y (the
// weight) bf16 through an R16G16B16A16_UINT view.
#define A_BF16
#define B_BF16
#define C_BF16
#include "matmul_outer_texels_body.glsl"

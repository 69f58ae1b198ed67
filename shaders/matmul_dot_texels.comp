#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

// matmul_dot_texels_body.glsl: X and Y f32 (or f16 through R16G16B16A16_SFLOAT views), C f32.
#include "matmul_dot_texels_body.glsl"

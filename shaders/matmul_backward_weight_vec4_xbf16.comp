#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

// matmul_backward_weight_vec4_body.glsl reading inp (the activation) as bf16.
#define B_BF16
#include "matmul_backward_weight_vec4_body.glsl"

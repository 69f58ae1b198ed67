#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

// matmul_outer_texels_body.glsl reading X (the activation) as f16 and Y (the weight) as bf16
// through an R16G16B16A16_UINT view, the result f32 (the chunked head's logits).
#define A_F16
#define B_BF16
#include "matmul_outer_texels_body.glsl"
